// The plugin chain on the request path: what one request's trip through its route's chain
// costs a worker, from prepare() through the log phase, as ClientConn drives it
// (exchange_plugins.cc). Chains are built from `plugins` JSON the way a snapshot builds them
// (config::build_chain), so each plugin's conf is parsed and checked as in production.
//
//   none        a route without plugins: what the chain machinery costs when empty
//   scenario2   the articles' scenario 2: limit-count (count 2e12, key remote_addr) and
//               prometheus {}
//   scenario2_filtered  the same with a `_meta.filter` on limit-count that matches

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <string_view>

#include "config/plugin_chains.h"
#include "http/message.h"
#include "io/event_loop.h"
#include "metrics/http_metrics.h"
#include "plugin/chain.h"
#include "plugin/info.h"
#include "plugins/prometheus/prometheus.h"
#include "router/ip.h"

namespace sluice::config {
namespace {

constexpr const char* kScenario2 = R"({
  "limit-count": {"count": 2000000000000, "time_window": 60, "rejected_code": 503,
                  "key": "remote_addr"},
  "prometheus": {}
})";

constexpr const char* kScenario2Filtered = R"({
  "limit-count": {"count": 2000000000000, "time_window": 60, "rejected_code": 503,
                  "key": "remote_addr",
                  "_meta": {"filter": [["arg_name", "==", "json"]]}},
  "prometheus": {}
})";

// One wrk-style request, the worker's plugin state, and the route's chain.
class Fixture {
 public:
  explicit Fixture(const char* plugins) : metrics_(1000) {
    std::vector<std::string> warnings;
    auto c = build_chain(plugin::Json::parse(plugins), "route/1", shared_, &warnings);
    if (!c.is_ok()) {
      error_ = c.status().message();
      return;
    }
    chain_ = *c;
    req_.method_text = "GET";
    req_.method = http::parse_method(req_.method_text);
    req_.target = "/hello?name=json";
    req_.path = req_.uri = "/hello";
    req_.query = "name=json";
    req_.host = "127.0.0.1:9080";
    req_.headers[req_.num_headers++] = http::Header{"Host", "127.0.0.1:9080"};
    req_.headers[req_.num_headers++] = http::Header{"User-Agent", "wrk"};
    match_.req = &req_;
    match_.remote_addr = "127.0.0.1";
    router::parse_ip("127.0.0.1", &match_.remote_ip);
    match_.server_port = 9080;
    worker_.set_slot(plugins::prometheus::slot_tag(), &metrics_);
    worker_.loop = &loop_;  // limit-count reads the loop's clock (updated once per batch)
  }
  const std::string& error() const { return error_; }

  // What a proxied request runs: begin_plugins, the request phases through before_proxy,
  // header_filter with the response head, body_filter with the body, log at the end.
  bool one_request() {
    plugin::Context& c = ctx_;
    c.reset();
    c.req = &req_;
    c.match = match_;
    c.worker = &worker_;
    c.route_id = "1";
    plugin::Chains chains{nullptr, chain_.get()};
    c.timed = chains.timed();
    if (c.timed) {
      c.start_ns = plugin::monotonic_ns();
      c.bytes_in = 80;
      c.matched_uri = "/hello";
    }
    plugin::prepare(chains, c);
    plugin::Action a = plugin::run_request(chains, c, plugin::Phase::kBeforeProxy);
    c.match.req = nullptr;
    c.upstream_ip = "127.0.0.1";
    c.status = 200;
    plugin::run_response(chains, c, plugin::Phase::kHeaderFilter);
    plugin::run_body_filter(chains, c, "hello world\n", true);
    c.bytes_out = 160;
    if (c.timed) {
      c.upstream_start_ns = c.start_ns;
      c.upstream_end_ns = plugin::monotonic_ns();
    }
    plugin::run_response(chains, c, plugin::Phase::kLog);
    return a == plugin::Action::kContinue;
  }

 private:
  plugin::Shared shared_;
  std::shared_ptr<const plugin::Chain> chain_;
  std::string error_;
  http::RequestHead req_;
  router::MatchContext match_;
  metrics::HttpMetrics metrics_;
  io::EventLoop loop_;
  plugin::WorkerLocal worker_;
  plugin::Context ctx_;
};

void run(benchmark::State& state, const char* plugins) {
  Fixture f(plugins);
  if (!f.error().empty()) {
    state.SkipWithError(f.error().c_str());
    return;
  }
  for (auto _ : state) {
    if (!f.one_request()) {
      state.SkipWithError("the chain did not let the request through");
      return;
    }
  }
}

void BM_ChainNone(benchmark::State& state) { run(state, "{}"); }
BENCHMARK(BM_ChainNone);

void BM_ChainScenario2(benchmark::State& state) { run(state, kScenario2); }
BENCHMARK(BM_ChainScenario2);

void BM_ChainScenario2Filtered(benchmark::State& state) { run(state, kScenario2Filtered); }
BENCHMARK(BM_ChainScenario2Filtered);

}  // namespace
}  // namespace sluice::config
