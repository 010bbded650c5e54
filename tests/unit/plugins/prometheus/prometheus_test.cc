// prometheus's log hook: what it records into the worker's HttpMetrics, under which labels, and
// how that shows in the exposition.

#include "plugins/prometheus/prometheus.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"

namespace sluice::plugins::prometheus {
namespace {

using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

PluginPtr make(const char* conf) {
  plugin::Shared shared;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return p.is_ok() ? *p : nullptr;
}

std::string render(const metrics::HttpMetrics& m) {
  const metrics::HttpMetrics* workers[] = {&m};
  metrics::ExpositionInput in;
  in.workers = workers;
  in.hostname = "gw-1";
  in.version = "3.9.0";
  return metrics::render(in);
}

bool contains(const std::string& text, std::string_view line) {
  return text.find(line) != std::string::npos;
}

// A finished request on route 1 (named hello) of service s1 (named svc), proxied to
// 127.0.0.1, 2 ms upstream.
class PrometheusTest : public ::testing::Test {
 protected:
  PrometheusTest() : metrics_(100) {
    worker_.set_slot(slot_tag(), &cells_);
    ctx_.worker = &worker_;
    ctx_.route_id = "1";
    ctx_.route_name = "hello";
    ctx_.service_id = "s1";
    ctx_.service_name = "svc";
    ctx_.matched_uri = "/hello";
    ctx_.matched_host = "example.com";
    ctx_.status = 200;
    ctx_.upstream_ip = "127.0.0.1";
    ctx_.bytes_in = 100;
    ctx_.bytes_out = 250;
    uint64_t now = plugin::monotonic_ns();
    ctx_.start_ns = now - 5'000'000;
    ctx_.upstream_start_ns = now - 4'000'000;
    ctx_.upstream_end_ns = now - 2'000'000;
  }

  metrics::HttpMetrics metrics_;
  Attr attr_;
  WorkerCells cells_{&metrics_, &attr_, {}};
  plugin::WorkerLocal worker_;
  plugin::Context ctx_;
};

TEST_F(PrometheusTest, InfoAndPhases) {
  EXPECT_EQ(info().name, "prometheus");
  EXPECT_EQ(info().priority, 500);
  PluginPtr p = make("{}");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->phases(), plugin::phase_bit(plugin::Phase::kLog));
  plugin::Shared shared;
  auto bad =
      info().make(Json::parse(R"({"prefer_name": "yes"})"), plugin::BuildEnv{"route/1", shared});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "property \"prefer_name\" validation failed: wrong type: expected boolean, got "
            "string");
}

TEST_F(PrometheusTest, RecordsStatusByRouteId) {
  PluginPtr p = make("{}");
  ASSERT_NE(p, nullptr);
  p->log(ctx_);
  p->log(ctx_);
  ctx_.status = 503;
  p->log(ctx_);
  const std::string text = render(metrics_);
  EXPECT_TRUE(contains(text,
                       "apisix_http_status{code=\"200\",route=\"1\",matched_uri=\"/hello\","
                       "matched_host=\"example.com\",service=\"s1\",consumer=\"\","
                       "node=\"127.0.0.1\"} 2\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "apisix_http_status{code=\"503\",route=\"1\",matched_uri=\"/hello\","
                       "matched_host=\"example.com\",service=\"s1\",consumer=\"\","
                       "node=\"127.0.0.1\"} 1\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "apisix_bandwidth{type=\"ingress\",route=\"1\",service=\"s1\","
                       "consumer=\"\",node=\"127.0.0.1\"} 300\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "apisix_bandwidth{type=\"egress\",route=\"1\",service=\"s1\","
                       "consumer=\"\",node=\"127.0.0.1\"} 750\n"))
      << text;
}

TEST_F(PrometheusTest, RecordsLatencies) {
  PluginPtr p = make("{}");
  ASSERT_NE(p, nullptr);
  p->log(ctx_);
  const std::string text = render(metrics_);
  const std::string labels = "route=\"1\",service=\"s1\",consumer=\"\",node=\"127.0.0.1\"";
  // The upstream took exactly 2 ms: in le="2" (inclusive), not in le="1".
  EXPECT_TRUE(
      contains(text, "apisix_http_latency_bucket{type=\"upstream\"," + labels + ",le=\"1\"} 0\n"))
      << text;
  EXPECT_TRUE(
      contains(text, "apisix_http_latency_bucket{type=\"upstream\"," + labels + ",le=\"2\"} 1\n"))
      << text;
  EXPECT_TRUE(contains(text, "apisix_http_latency_sum{type=\"upstream\"," + labels + "} 2\n"))
      << text;
  for (const char* type : {"request", "upstream", "apisix"}) {
    SCOPED_TRACE(type);
    EXPECT_TRUE(contains(
        text, std::string("apisix_http_latency_count{type=\"") + type + "\"," + labels + "} 1\n"))
        << text;
  }
}

TEST_F(PrometheusTest, NoUpstreamNoUpstreamLatency) {
  PluginPtr p = make("{}");
  ASSERT_NE(p, nullptr);
  ctx_.upstream_ip = {};
  ctx_.upstream_start_ns = ctx_.upstream_end_ns = 0;
  ctx_.status = 404;
  p->log(ctx_);
  const std::string text = render(metrics_);
  EXPECT_TRUE(contains(text,
                       "apisix_http_status{code=\"404\",route=\"1\",matched_uri=\"/hello\","
                       "matched_host=\"example.com\",service=\"s1\",consumer=\"\","
                       "node=\"\"} 1\n"))
      << text;
  EXPECT_FALSE(contains(text, "apisix_http_latency_count{type=\"upstream\"")) << text;
  EXPECT_TRUE(contains(text,
                       "apisix_http_latency_count{type=\"request\",route=\"1\","
                       "service=\"s1\",consumer=\"\",node=\"\"} 1\n"))
      << text;
}

TEST_F(PrometheusTest, PreferNameLabelsByName) {
  PluginPtr p = make(R"({"prefer_name": true})");
  ASSERT_NE(p, nullptr);
  ctx_.consumer = "jack";
  p->log(ctx_);
  // A route or service without a name keeps its id.
  ctx_.route_name = {};
  ctx_.service_name = {};
  p->log(ctx_);
  const std::string text = render(metrics_);
  EXPECT_TRUE(contains(text,
                       "apisix_http_status{code=\"200\",route=\"hello\",matched_uri=\"/hello\","
                       "matched_host=\"example.com\",service=\"svc\",consumer=\"jack\","
                       "node=\"127.0.0.1\"} 1\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "apisix_http_status{code=\"200\",route=\"1\",matched_uri=\"/hello\","
                       "matched_host=\"example.com\",service=\"s1\",consumer=\"jack\","
                       "node=\"127.0.0.1\"} 1\n"))
      << text;
}

TEST_F(PrometheusTest, PreferNameOffKeepsIds) {
  PluginPtr p = make(R"({"prefer_name": false})");
  ASSERT_NE(p, nullptr);
  p->log(ctx_);
  const std::string text = render(metrics_);
  EXPECT_TRUE(contains(text, "route=\"1\",matched_uri=\"/hello\"")) << text;
  EXPECT_FALSE(contains(text, "route=\"hello\"")) << text;
}

TEST_F(PrometheusTest, WithoutHttpMetricsNothingIsRecorded) {
  PluginPtr p = make("{}");
  ASSERT_NE(p, nullptr);
  worker_.set_slot(slot_tag(), nullptr);
  p->log(ctx_);
  EXPECT_EQ(metrics_.series(), 0u);
  EXPECT_FALSE(contains(render(metrics_), "apisix_http_status{")) << render(metrics_);
  worker_.set_slot(slot_tag(), &cells_);
  p->log(ctx_);
  EXPECT_EQ(metrics_.series(), 2u);  // one status set and its route set
}

// The lifecycle hooks own the cells: one per worker from process_init, each worker's own
// from worker_init, all of them summed by the control endpoint.
TEST(PrometheusLifecycle, HooksMakeOneCellPerWorkerAndControlSumsThem) {
  plugin::Shared shared;
  shared.attr = Json::parse(R"({"prometheus": {"max_label_sets": 2}})");
  ASSERT_NE(info().process_init, nullptr);
  info().process_init(shared, plugin::ProcessEnv{2});
  plugin::WorkerLocal w0, w1;
  w0.worker_id = 0;
  w1.worker_id = 1;
  info().worker_init(shared, w0);
  info().worker_init(shared, w1);
  auto* c0 = w0.slot<WorkerCells>(slot_tag());
  auto* c1 = w1.slot<WorkerCells>(slot_tag());
  ASSERT_NE(c0, nullptr);
  ASSERT_NE(c1, nullptr);
  EXPECT_NE(c0, c1);
  // Route accounting's meter: off (no cost for the connections) until a route has the plugin.
  EXPECT_FALSE(w0.cpu.on());
  auto made = info().make(Json::object(), plugin::BuildEnv{"route/1", shared});
  ASSERT_TRUE(made.is_ok());
  EXPECT_TRUE(w0.cpu.on());
  EXPECT_TRUE(w1.cpu.on());
  PluginPtr p = *made;
  plugin::Context ctx;
  ctx.route_id = "1";
  ctx.status = 200;
  ctx.worker = &w0;
  p->log(ctx);
  ctx.worker = &w1;
  p->log(ctx);
  std::string text = info().control(shared);
  EXPECT_TRUE(contains(text, "apisix_http_status{code=\"200\",route=\"1\"")) << text;
  EXPECT_TRUE(contains(text, "\"} 2\n")) << text;
  // max_label_sets 2 came from plugin_attr: w1 holds two sets, a third is dropped.
  ctx.status = 404;
  p->log(ctx);
  EXPECT_TRUE(contains(info().control(shared), "sluice_prometheus_dropped_samples_total 1"));
  // The gateway's own families are not the plugin's to render.
  EXPECT_FALSE(contains(text, "apisix_node_info")) << text;
  info().destroy(shared);
  EXPECT_EQ(info().control(shared).find("apisix_http_status{"), std::string::npos);
}

TEST(PrometheusLifecycle, RouteAccountingOffLeavesTheMeterOff) {
  plugin::Shared shared;
  shared.attr = Json::parse(R"({"prometheus": {"route_accounting": false}})");
  info().process_init(shared, plugin::ProcessEnv{1});
  plugin::WorkerLocal w0;
  info().worker_init(shared, w0);
  ASSERT_TRUE(info().make(Json::object(), plugin::BuildEnv{"route/1", shared}).is_ok());
  EXPECT_FALSE(w0.cpu.on());
  info().destroy(shared);
}

}  // namespace
}  // namespace sluice::plugins::prometheus
