#pragma once
// A request through a chain of coding plugins (gzip, brotli) on a fake context: the request
// head with its Accept-Encoding, header_filter on an upstream's (or the gateway's) answer,
// the body's pieces through body_filter, and the log phase.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugin/chain.h"
#include "plugin/info.h"

namespace sluice::plugins::coding_test {

using plugin::Json;
using plugin::Phase;

class CoderFixture : public ::testing::Test {
 protected:
  CoderFixture() {
    up_.status = 200;
    set_up_headers({{"Content-Type", "text/html; charset=utf-8"}, {"ETag", "\"abc\""}});
  }
  ~CoderFixture() override { ctx_.reset(); }

  void set_up_headers(std::vector<std::pair<std::string, std::string>> h) {
    up_fields_ = std::move(h);
    up_.num_headers = 0;
    for (const auto& [n, v] : up_fields_) {
      up_.headers[up_.num_headers++] = {n, v};
    }
  }
  // Adds a plugin (`info` with `conf`) to the route's chain.
  void use(const plugin::PluginInfo& info, const std::string& conf) {
    if (info.worker_init != nullptr) {
      info.worker_init(shared_, worker_);
    }
    auto p = info.make(Json::parse(conf), plugin::BuildEnv{"route/1", shared_});
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    plugin::Entry e;
    e.name = std::string(info.name);
    e.priority = info.priority;
    e.plugin = *p;
    entries_.push_back(std::move(e));
    route_ = std::make_unique<plugin::Chain>(entries_);
    chains_.route = route_.get();
  }
  // The request: its Accept-Encoding (none when empty), HTTP/1.<minor>, method.
  void request(std::string accept, int minor = 1, http::Method m = http::Method::kGet) {
    ctx_.reset();
    ctx_.worker = &worker_;
    accept_ = std::move(accept);
    req_ = {};
    req_.method = m;
    req_.version_minor = minor;
    if (!accept_.empty()) {
      req_.headers[req_.num_headers++] = {"Accept-Encoding", accept_};
    }
    ctx_.req = &req_;
    plugin::prepare(chains_, ctx_);
    ctx_.req = nullptr;  // gone before the response phases, as in the server
  }
  // header_filter on the upstream's answer with `length` (-1: chunked), or the gateway's.
  void head(int status, int64_t length, bool gateway = false) {
    up_.status = status;
    up_.body_kind = length < 0 ? http::BodyKind::kChunked : http::BodyKind::kLength;
    up_.content_length = length < 0 ? 0 : static_cast<uint64_t>(length);
    ctx_.status = status;
    ctx_.upstream_resp = gateway ? nullptr : &up_;
    plugin::run_response(chains_, ctx_, Phase::kHeaderFilter);
    ctx_.upstream_resp = nullptr;
  }
  // What the client gets for these pieces, the last one carrying eof.
  std::string body(const std::vector<std::string>& pieces) {
    std::string out;
    for (size_t i = 0; i < pieces.size(); ++i) {
      out += plugin::run_body_filter(chains_, ctx_, pieces[i], i + 1 == pieces.size());
    }
    return out;
  }
  void log() { plugin::run_response(chains_, ctx_, Phase::kLog); }
  // The value plugins gave `name` ("" when none; "-" when removed).
  std::string edited(std::string_view name) const {
    const std::string* v = nullptr;
    if (!ctx_.resp.headers.lookup(name, &v)) {
      return "";
    }
    return v == nullptr ? "-" : *v;
  }
  int count_added(std::string_view name) const {
    int n = 0;
    ctx_.resp.headers.for_each_added(
        [&](std::string_view k, std::string_view) { n += http::iequals(k, name) ? 1 : 0; });
    return n;
  }

  plugin::Shared shared_;
  plugin::WorkerLocal worker_;
  plugin::Context ctx_;
  http::RequestHead req_;
  std::string accept_;
  http::ResponseHead up_;
  std::vector<std::pair<std::string, std::string>> up_fields_;
  std::vector<plugin::Entry> entries_;
  std::unique_ptr<plugin::Chain> route_;
  plugin::Chains chains_;
};

}  // namespace sluice::plugins::coding_test
