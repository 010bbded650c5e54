#pragma once
// Where the tracers' batches go: one POST per batch on a kept-alive HTTP/1.1 connection (TLS
// for https), on the batch processor's sender thread only. The connections and the response
// head's parser are the loggers' (plugins/loggers/net.h, http_sink.h).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::plugins::loggers {
class Conn;
class TlsClient;
}  // namespace sluice::plugins::loggers

namespace sluice::plugins::tracing {

// An http(s) endpoint, split.
// Thread: any (immutable)
struct Endpoint {
  bool https = false;
  std::string host;  // without brackets for an IPv6 literal
  uint16_t port = 80;
  std::string host_header;  // host[:port]
  std::string path = "/";
};

// `http://host[:port][/path]`, `https://...`, or (`bare_ok`) `host:port` as OTLP's collector
// address is written; an error says what is wrong.
common::StatusOr<Endpoint> parse_endpoint(std::string_view text, bool bare_ok);

// Thread: the processor's sender
class HttpPoster {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;
  HttpPoster(Endpoint e, std::string content_type, Headers headers, uint64_t timeout_ms);
  ~HttpPoster();
  // Sends `body`; false with `*err` when it failed or the answer was not 2xx.
  bool post(std::string_view body, std::string* err);

 private:
  common::Status exchange(const std::string& req, std::string* err);
  common::Status more(std::string* buf);

  const Endpoint e_;
  std::string head_;  // the request head but Content-Length
  const uint64_t timeout_ms_;
  std::unique_ptr<loggers::TlsClient> tls_;
  std::unique_ptr<loggers::Conn> conn_;
};

}  // namespace sluice::plugins::tracing
