// plugin_attr.prometheus's default_buckets and extra_labels: the checks config.yaml's reader
// makes, the layout the cells get, and the values a request gives its extra labels, read from
// the request head before any phase (Plugin::head) and recorded in the log phase.

#include "plugins/prometheus/attr.h"

#include <gtest/gtest.h>

#include <string>

#include "metrics/exposition.h"
#include "plugin/chain.h"
#include "plugins/prometheus/prometheus.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::prometheus {
namespace {

using plugin::Json;

TEST(PrometheusAttr, BucketChecks) {
  EXPECT_TRUE(check_default_buckets(Json::parse("[0.5, 1, 300]")).is_ok());
  for (const char* bad : {"[]", "5", "[1, 1]", "[3, 2]", "[-1, 2]", "[0]", "[\"1\"]"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(check_default_buckets(Json::parse(bad)).is_ok());
  }
}

TEST(PrometheusAttr, ExpireChecks) {
  for (const char* ok : {"0", "1", "0.5", "31536000"}) {
    EXPECT_TRUE(check_expire(Json::parse(ok)).is_ok()) << ok;
  }
  for (const char* bad : {"-1", "\"60\"", "true", "31536001", "null", "[1]"}) {
    EXPECT_FALSE(check_expire(Json::parse(bad)).is_ok()) << bad;
  }
}

TEST(PrometheusAttr, FamiliesExpireTogether) {
  EXPECT_TRUE(check_expires(Json::parse(R"({"metrics": {"http_status": {"expire": 5}}})")));
  EXPECT_TRUE(check_expires(
      Json::parse(R"({"metrics": {"http_status": {"expire": 5}, "bandwidth": {"expire": 5}}})")));
  auto s = check_expires(
      Json::parse(R"({"metrics": {"http_latency": {"expire": 5}, "bandwidth": {"expire": 0}}})"));
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(s.message().starts_with("http_latency.expire and bandwidth.expire differ"))
      << s.message();
  // A family given alone sets the expiry of all three; 0 and unset mean never.
  EXPECT_EQ(
      read_attr(Json::parse(R"({"metrics": {"bandwidth": {"expire": 1.5}}})")).layout->expire_ms,
      1500u);
  EXPECT_EQ(read_attr(Json::object()).layout->expire_ms, 0u);
  EXPECT_TRUE(read_attr(Json::object()).cpu);
  EXPECT_FALSE(read_attr(Json::parse(R"({"route_accounting": false})")).layout->cpu);
}

TEST(PrometheusAttr, VariablesSluiceCannotReadAreRefusedByName) {
  for (const char* ok : {"$uri", "$host", "$arg_v", "$http_x_tenant", "$cookie_c", "$status",
                         "$route_name", "$service_id", "$consumer_name", "$remote_addr",
                         "$request_method", "$server_port", "$scheme", "$ssl_server_name"}) {
    EXPECT_TRUE(LabelVar::parse(ok).is_ok()) << ok;
  }
  for (const char* bad : {"$server_addr", "$upstream_status", "$sent_http_x", "$upstream_http_x",
                          "$request_time", "$no_such_var"}) {
    auto v = LabelVar::parse(bad);
    ASSERT_FALSE(v.is_ok()) << bad;
    EXPECT_EQ(v.status().message(),
              "variable \"" + std::string(bad) + "\" is not supported by Sluice");
  }
  auto e = check_extra_labels(Json::parse(R"([{"a": "$uri"}, {"a": "$host"}])"), Family::kStatus);
  EXPECT_EQ(e.message(), "[1]: label \"a\" is already in http_status");
  e = check_extra_labels(Json::parse(R"([{"le": "$uri"}])"), Family::kLatency);
  EXPECT_EQ(e.message(), "[0]: label \"le\" is already in http_latency");
  e = check_extra_labels(Json::parse(R"([{"a-b": "$uri"}])"), Family::kBandwidth);
  EXPECT_EQ(e.message(), "[0]: \"a-b\" is not a Prometheus label name");
  e = check_extra_labels(Json::parse(R"([{"a": "$uri", "b": "$host"}])"), Family::kBandwidth);
  EXPECT_EQ(e.message(), "[0]: expected one {label_name: \"$variable\"}");
}

TEST(PrometheusAttr, UpstreamAddrNamesTheLastTriedNodeAsNginxDoes) {
  auto v = LabelVar::parse("$upstream_addr");
  ASSERT_TRUE(v.is_ok());
  plugin::Context ctx;
  router::VarScratch scratch;
  LabelVar::Buf buf;
  EXPECT_EQ(v->get(ctx, &scratch, buf), "");  // nothing tried: nil
  ctx.upstream_ip = "10.0.0.7";
  ctx.upstream_port = 8080;
  EXPECT_EQ(v->get(ctx, &scratch, buf), "10.0.0.7:8080");
  ctx.upstream_ip = "2001:db8::1";
  ctx.upstream_port = 443;
  EXPECT_EQ(v->get(ctx, &scratch, buf), "[2001:db8::1]:443");
}

TEST(PrometheusAttr, ReadAttrMakesTheLayout) {
  Attr a = read_attr(Json::parse(R"({"default_buckets": [3, 30],
      "metrics": {"http_status": {"extra_labels": [{"tenant": "$http_x_tenant"}]},
                  "http_latency": {"extra_labels": [{"code": "$status"}]}}})"));
  EXPECT_EQ(a.layout->bounds, (std::vector<double>{3, 30}));
  EXPECT_EQ(a.layout->status_extra, (std::vector<std::string>{"tenant"}));
  EXPECT_EQ(a.layout->latency_extra, (std::vector<std::string>{"code"}));
  EXPECT_TRUE(a.layout->bandwidth_extra.empty());
  EXPECT_TRUE(a.reads_head);  // $http_x_tenant
  Attr none = read_attr(Json::object());
  EXPECT_EQ(none.layout->bounds.size(), metrics::kLatencyBounds.size());
  EXPECT_FALSE(none.reads_head);
}

// The request head is released before the log phase (a proxied request's once it is sent
// upstream, a reply's before it is written): head() keeps its values for log().
TEST(PrometheusAttr, RequestValuesAreReadBeforeThePhasesAndRecordedInLog) {
  plugin::Shared shared;
  shared.attr = Json::parse(R"({"prometheus": {"default_buckets": [100],
      "metrics": {"http_status": {"extra_labels": [{"tenant": "$http_x_tenant"},
                                                   {"code2": "$status"},
                                                   {"v": "$arg_v"}]},
                  "bandwidth": {"extra_labels": [{"path": "$uri"}]}}}})");
  info().process_init(shared, plugin::ProcessEnv{1});
  plugin::WorkerLocal w;
  info().worker_init(shared, w);
  auto p = info().make(Json::object(), plugin::BuildEnv{"route/1", shared});
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  ASSERT_TRUE((*p)->reads_head());
  std::vector<plugin::Entry> entries(1);
  entries[0].name = "prometheus";
  entries[0].plugin = *p;
  plugin::Chain route(std::move(entries));

  router::testing::FakeRequest req("GET", "/a/b?v=x%22", "", {{"X-Tenant", "acme"}});
  plugin::Context ctx;
  ctx.worker = &w;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.route_id = "1";
  ctx.start_ns = plugin::monotonic_ns();
  plugin::prepare(plugin::Chains{nullptr, &route}, ctx);
  ctx.req = nullptr;  // what the server does before the log phase
  ctx.match.req = nullptr;
  ctx.status = 503;
  plugin::run_response(plugin::Chains{nullptr, &route}, ctx, plugin::Phase::kLog);

  const std::string text = info().control(shared);
  EXPECT_NE(text.find("node=\"\",tenant=\"acme\",code2=\"503\",v=\"x%22\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_bandwidth{type=\"egress\",route=\"1\",service=\"\",consumer=\"\","
                      "node=\"\",path=\"/a/b\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(",le=\"100\"} 1\n"), std::string::npos) << text;
  info().destroy(shared);
}

}  // namespace
}  // namespace sluice::plugins::prometheus
