// HttpLayout: custom latency buckets (plugin_attr.prometheus.default_buckets) and each
// family's extra labels (metrics.<family>.extra_labels), as recorded and rendered.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"
#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::count_of;
using testing::render_workers;
using testing::sample;

std::shared_ptr<const HttpLayout> layout(std::vector<double> bounds,
                                         std::vector<std::string> status = {},
                                         std::vector<std::string> latency = {},
                                         std::vector<std::string> bandwidth = {}) {
  auto l = std::make_shared<HttpLayout>();
  l->bounds = std::move(bounds);
  l->status_extra = std::move(status);
  l->latency_extra = std::move(latency);
  l->bandwidth_extra = std::move(bandwidth);
  return l;
}

TEST(HttpLayoutTest, CustomBucketsReplaceTheDefaultOnes) {
  HttpMetrics m(100, layout({5, 50.5}));
  m.record(sample("1", 200, 10, -1));
  m.record(sample("1", 200, 3, -1));
  const std::string text = render_workers({&m});
  const std::string head =
      "apisix_http_latency_bucket{type=\"request\",route=\"1\",service=\"\",consumer=\"\","
      "node=\"127.0.0.1\",le=";
  EXPECT_NE(text.find(head + "\"5\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find(head + "\"50.5\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find(head + "\"+Inf\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(head + "\"1\"}"), std::string::npos) << text;  // a default bound
  EXPECT_EQ(count_of(text, "apisix_http_latency_bucket{type=\"request\""), 3u) << text;
}

TEST(HttpLayoutTest, EachFamilyGetsItsOwnExtraLabelsEscaped) {
  HttpMetrics m(100, layout({1}, {"tenant"}, {"method", "v"}, {"v"}));
  const std::string_view tenant[] = {"a\"b"};
  const std::string_view latency[] = {"GET", "2"};
  const std::string_view bandwidth[] = {"2"};
  HttpSample s = sample("1", 200, 0.5, -1);
  s.status_extra = tenant;
  s.latency_extra = latency;
  s.bandwidth_extra = bandwidth;
  m.record(s);
  m.record(s);
  const std::string text = render_workers({&m});
  EXPECT_NE(text.find("apisix_http_status{code=\"200\",route=\"1\",matched_uri=\"/hello\","
                      "matched_host=\"\",service=\"\",consumer=\"\",node=\"127.0.0.1\","
                      "tenant=\"a\\\"b\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_latency_count{type=\"request\",route=\"1\",service=\"\","
                      "consumer=\"\",node=\"127.0.0.1\",method=\"GET\",v=\"2\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_latency_bucket{type=\"request\",route=\"1\",service=\"\","
                      "consumer=\"\",node=\"127.0.0.1\",method=\"GET\",v=\"2\",le=\"1\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_bandwidth{type=\"ingress\",route=\"1\",service=\"\",consumer=\"\","
                      "node=\"127.0.0.1\",v=\"2\"} 200\n"),
            std::string::npos)
      << text;
}

// Two requests differing only in a latency extra label are two latency lines but, as their
// bandwidth labels are the same, one bandwidth line with both requests' bytes.
TEST(HttpLayoutTest, SetsThatDifferInOneFamilysLabelsShareTheOthersLine) {
  HttpMetrics m(100, layout({1}, {}, {"method"}, {}));
  const std::string_view get[] = {"GET"}, post[] = {"POST"};
  HttpSample a = sample("1", 200, 0.5, -1), b = a;
  a.latency_extra = get;
  b.latency_extra = post;
  m.record(a);
  m.record(b);
  const std::string text = render_workers({&m});
  EXPECT_EQ(count_of(text, "apisix_http_latency_count{type=\"request\""), 2u) << text;
  EXPECT_NE(text.find("apisix_bandwidth{type=\"ingress\",route=\"1\",service=\"\",consumer=\"\","
                      "node=\"127.0.0.1\"} 200\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("apisix_http_status{code=\"200\",route=\"1\",matched_uri=\"/hello\","
                      "matched_host=\"\",service=\"\",consumer=\"\",node=\"127.0.0.1\"} 2\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace sluice::metrics
