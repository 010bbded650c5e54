#include "plugins/tracing/sinks.h"

#include "plugins/tracing/http_post.h"
#include "plugins/tracing/otel_span.h"

namespace sluice::plugins::tracing {

namespace {

// The loggers' key (plugins/loggers/loggers.cc): their registry renders every processor's
// metrics and http-logger's destroy hook stops it, whichever plugins are enabled.
constexpr char kRegistryKey[] = "loggers.registry";

// Thread: the sender
class OtlpSink final : public batch::Sink {
 public:
  explicit OtlpSink(std::shared_ptr<const OtelAttr> attr)
      : attr_(std::move(attr)),
        post_(attr_->collector, "application/x-protobuf", attr_->request_headers,
              attr_->timeout_ms) {}

  bool send(std::span<const std::string> entries, std::string* err) override {
    body_.clear();
    encode_export(attr_->resource, entries, &body_);
    return post_.post(body_, err);
  }

 private:
  std::shared_ptr<const OtelAttr> attr_;
  HttpPoster post_;
  std::string body_;
};

// Thread: the sender
class ZipkinSink final : public batch::Sink {
 public:
  explicit ZipkinSink(const Endpoint& e) : post_(e, "application/json", {}, kZipkinTimeoutMs) {}

  bool send(std::span<const std::string> entries, std::string* err) override {
    body_.assign("[");
    for (const std::string& e : entries) {
      body_.append(body_.size() > 1 ? "," : "").append(e);
    }
    body_.append("]");
    return post_.post(body_, err);
  }

 private:
  // APISIX's reporter sets none (resty.http's cosocket default, 60 s); a sender thread held
  // that long by a hung collector drops spans meanwhile, so Sluice waits as http-logger does.
  static constexpr uint64_t kZipkinTimeoutMs = 3000;
  HttpPoster post_;
  std::string body_;
};

}  // namespace

std::shared_ptr<batch::Registry> registry(plugin::Shared& shared) {
  return shared.get<batch::Registry>(kRegistryKey,
                                     [] { return std::make_shared<batch::Registry>(); });
}

std::unique_ptr<batch::Sink> make_otlp_sink(std::shared_ptr<const OtelAttr> attr) {
  return std::make_unique<OtlpSink>(std::move(attr));
}

std::unique_ptr<batch::Sink> make_zipkin_sink(const Endpoint& endpoint) {
  return std::make_unique<ZipkinSink>(endpoint);
}

}  // namespace sluice::plugins::tracing
