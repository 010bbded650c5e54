#include "metrics/exposition.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::count_of;
using testing::latency_line;
using testing::render_workers;
using testing::sample;
using testing::status_line;

TEST(ExpositionTest, IdenticalLabelSetsOfTwoWorkersPrintOnceSummed) {
  HttpMetrics w1(100), w2(100);
  w1.record(sample("1", 200, 3, 2));
  w1.record(sample("1", 200, 3, 2));
  w2.record(sample("1", 200, 7, 2));
  w2.record(sample("2", 200, 3, 2));
  w2.record(sample("1", 502, 3, 2));
  const std::string text = render_workers({&w1, &w2});
  EXPECT_NE(text.find(status_line("1", 200, 3)), std::string::npos) << text;
  EXPECT_NE(text.find(status_line("1", 502, 1)), std::string::npos);
  EXPECT_NE(text.find(status_line("2", 200, 1)), std::string::npos);
  EXPECT_EQ(count_of(text, "apisix_http_status{"), 3u);
  EXPECT_NE(text.find(latency_line("request", "bucket", "5", "3")), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "bucket", "10", "4")), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "sum", "", "16")), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "count", "", "4")), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "count", "", "1", "2")), std::string::npos);
  EXPECT_EQ(count_of(text, "apisix_http_latency_count{type=\"request\""), 2u);
  EXPECT_NE(text.find("apisix_bandwidth{type=\"egress\",route=\"1\",service=\"\",consumer=\"\","
                      "node=\"127.0.0.1\"} 1000\n"),
            std::string::npos);
}

struct EscapeCase {
  const char* raw;
  const char* printed;
};

TEST(ExpositionTest, LabelValuesEscapeBackslashQuoteAndNewline) {
  const std::vector<EscapeCase> cases = {
      {"plain", "plain"}, {"a\"b", "a\\\"b"},        {"a\\b", "a\\\\b"},
      {"a\nb", "a\\nb"},  {"\\\"\n", "\\\\\\\"\\n"}, {"tab\there", "tab\there"},
  };
  for (const EscapeCase& c : cases) {
    SCOPED_TRACE(c.raw);
    HttpMetrics m(100);
    HttpSample s = sample();
    s.labels.consumer = c.raw;
    s.labels.matched_host = c.raw;
    m.record(s);
    const std::string text = render_workers({&m});
    const std::string printed = c.printed;
    EXPECT_NE(text.find("matched_host=\"" + printed + "\",service=\"\",consumer=\"" + printed +
                        "\",node=\"127.0.0.1\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("apisix_bandwidth{type=\"ingress\",route=\"1\",service=\"\",consumer=\"" +
                        printed + "\",node=\"127.0.0.1\"} 100\n"),
              std::string::npos);
  }
}

TEST(ExpositionTest, EmptyInputStillPrintsEveryFamilyHead) {
  const std::string text = render(ExpositionInput{});
  EXPECT_EQ(text,
            "# HELP apisix_http_status HTTP status codes per service in APISIX\n"
            "# TYPE apisix_http_status counter\n"
            "# HELP apisix_http_latency HTTP request latency in milliseconds per service in "
            "APISIX\n"
            "# TYPE apisix_http_latency histogram\n"
            "# HELP apisix_bandwidth Total bandwidth in bytes consumed per service in APISIX\n"
            "# TYPE apisix_bandwidth counter\n"
            "# HELP sluice_route_bytes_total Bytes from the client (ingress) and to the client "
            "(egress) per route, service and consumer (Sluice only)\n"
            "# TYPE sluice_route_bytes_total counter\n"
            "# HELP sluice_prometheus_dropped_samples_total Samples the prometheus plugin did not "
            "record because a worker reached plugin_attr.prometheus.max_label_sets\n"
            "# TYPE sluice_prometheus_dropped_samples_total counter\n"
            "sluice_prometheus_dropped_samples_total 0\n"
            "# HELP apisix_nginx_http_current_connections Number of HTTP connections\n"
            "# TYPE apisix_nginx_http_current_connections gauge\n"
            "apisix_nginx_http_current_connections{state=\"active\"} 0\n"
            "apisix_nginx_http_current_connections{state=\"accepted\"} 0\n"
            "apisix_nginx_http_current_connections{state=\"handled\"} 0\n"
            "apisix_nginx_http_current_connections{state=\"reading\"} 0\n"
            "apisix_nginx_http_current_connections{state=\"writing\"} 0\n"
            "apisix_nginx_http_current_connections{state=\"waiting\"} 0\n"
            "# HELP apisix_http_requests_total The total number of client requests since APISIX "
            "started\n"
            "# TYPE apisix_http_requests_total gauge\n"
            "apisix_http_requests_total 0\n"
            "# HELP apisix_node_info Info of APISIX node\n"
            "# TYPE apisix_node_info gauge\n"
            "apisix_node_info{hostname=\"\",version=\"\"} 1\n");
}

TEST(ExpositionTest, ConnectionStatesAndRequestsSumOverWorkers) {
  ConnStats c1, c2;
  ConnStats::inc(c1.accepted, 5);
  ConnStats::inc(c1.handled, 5);
  ConnStats::inc(c1.active, 3);
  ConnStats::dec(c1.active);
  ConnStats::inc(c1.waiting, 2);
  ConnStats::inc(c2.accepted, 4);
  ConnStats::inc(c2.handled, 4);
  ConnStats::inc(c2.active);
  ConnStats::inc(c2.reading);
  ConnStats::inc(c2.writing);
  ConnStats::inc(c1.requests, 9);
  ConnStats::inc(c2.requests, 11);
  const ConnStats* conns[] = {&c1, &c2};
  ExpositionInput in;
  in.conns = conns;
  in.hostname = "gw\"1";
  in.version = "3.9.0";
  const std::string text = render(in);
  EXPECT_NE(text.find("apisix_nginx_http_current_connections{state=\"active\"} 3\n"
                      "apisix_nginx_http_current_connections{state=\"accepted\"} 9\n"
                      "apisix_nginx_http_current_connections{state=\"handled\"} 9\n"
                      "apisix_nginx_http_current_connections{state=\"reading\"} 1\n"
                      "apisix_nginx_http_current_connections{state=\"writing\"} 1\n"
                      "apisix_nginx_http_current_connections{state=\"waiting\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\napisix_http_requests_total 20\n"), std::string::npos);
  EXPECT_NE(text.find("\napisix_node_info{hostname=\"gw\\\"1\",version=\"3.9.0\"} 1\n"),
            std::string::npos);
}

TEST(ExpositionTest, DroppedSamplesSumOverWorkers) {
  HttpMetrics w1(0), w2(0);
  w1.record(sample());
  w2.record(sample());
  w2.record(sample());
  const std::string text = render_workers({&w1, &w2});
  EXPECT_NE(text.find("# TYPE sluice_prometheus_dropped_samples_total counter\n"
                      "sluice_prometheus_dropped_samples_total 3\n"),
            std::string::npos)
      << text;
}

TEST(ExpositionTest, ExtraGaugesFollowWithEscapedLabels) {
  const Label up[] = {{"name", "/apisix/upstreams/1"}, {"ip", "10.0.0.1"}, {"port", "80"}};
  const GaugeSample upstream_samples[] = {{up, 1}};
  const GaugeSample etcd_samples[] = {{{}, 0}};
  const GaugeFamily gauges[] = {
      {"apisix_etcd_reachable", "Config server etcd reachable from APISIX, 0 is unreachable",
       etcd_samples},
      {"apisix_upstream_status", "Upstream status from health check", upstream_samples},
  };
  ExpositionInput in;
  in.gauges = gauges;
  const std::string text = render(in);
  const std::string tail =
      "# HELP apisix_etcd_reachable Config server etcd reachable from APISIX, 0 is unreachable\n"
      "# TYPE apisix_etcd_reachable gauge\n"
      "apisix_etcd_reachable 0\n"
      "# HELP apisix_upstream_status Upstream status from health check\n"
      "# TYPE apisix_upstream_status gauge\n"
      "apisix_upstream_status{name=\"/apisix/upstreams/1\",ip=\"10.0.0.1\",port=\"80\"} 1\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
}

}  // namespace
}  // namespace sluice::metrics
