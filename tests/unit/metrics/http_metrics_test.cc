#include "metrics/http_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "metrics/exposition.h"
#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::latency_line;
using testing::render_workers;
using testing::sample;
using testing::status_line;

struct BucketCase {
  double ms;
  const char* below;  // the last bound still at 0 ("" when the sample is in le="1")
  const char* first;  // the first bound counting the sample
};

TEST(HttpMetricsTest, SampleLandsInTheFirstBucketWhoseBoundHoldsIt) {
  const std::vector<BucketCase> cases = {
      {0, "", "1"},
      {1.0, "", "1"},
      {1.5, "1", "2"},
      {2, "1", "2"},
      {2.0001, "2", "5"},
      {999.9, "500", "1000"},
      {60000, "30000", "60000"},
      {70000, "60000", "+Inf"},
      {-3, "", "1"},
  };
  for (const BucketCase& c : cases) {
    SCOPED_TRACE(c.ms);
    HttpMetrics m(100);
    m.record(sample("1", 200, c.ms, -1));
    const std::string text = render_workers({&m});
    if (*c.below != '\0') {
      EXPECT_NE(text.find(latency_line("request", "bucket", c.below, "0")), std::string::npos);
    }
    EXPECT_NE(text.find(latency_line("request", "bucket", c.first, "1")), std::string::npos);
    EXPECT_NE(text.find(latency_line("request", "bucket", "+Inf", "1")), std::string::npos);
    EXPECT_NE(text.find(latency_line("request", "count", "", "1")), std::string::npos);
  }
}

TEST(HttpMetricsTest, BucketsAreCumulativeWithSumAndCount) {
  HttpMetrics m(100);
  for (double ms : {0.5, 1.5, 1.5, 7.0, 45000.0, 70000.0}) {
    m.record(sample("1", 200, ms, -1));
  }
  const std::string text = render_workers({&m});
  const std::vector<std::pair<const char*, const char*>> want = {
      {"1", "1"},     {"2", "3"},     {"5", "3"},     {"10", "4"},   {"20", "4"},   {"50", "4"},
      {"100", "4"},   {"200", "4"},   {"500", "4"},   {"1000", "4"}, {"2000", "4"}, {"5000", "4"},
      {"10000", "4"}, {"30000", "4"}, {"60000", "5"}, {"+Inf", "6"},
  };
  std::string expected;
  for (const auto& [le, n] : want) {
    expected += latency_line("request", "bucket", le, n);
  }
  expected += latency_line("request", "sum", "", "115010.5");
  expected += latency_line("request", "count", "", "6");
  EXPECT_NE(text.find(expected), std::string::npos) << text;
}

TEST(HttpMetricsTest, UpstreamSeriesOnlyWhenAnUpstreamWasInvolved) {
  HttpMetrics m(100);
  m.record(sample("1", 200, 3, -1));
  m.record(sample("2", 200, 3, 2));
  const std::string text = render_workers({&m});
  EXPECT_EQ(text.find("type=\"upstream\",route=\"1\""), std::string::npos) << text;
  EXPECT_NE(text.find(latency_line("apisix", "sum", "", "3", "1")), std::string::npos);
  EXPECT_NE(text.find(latency_line("upstream", "sum", "", "2", "2")), std::string::npos);
  EXPECT_NE(text.find(latency_line("apisix", "sum", "", "1", "2")), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "sum", "", "3", "2")), std::string::npos);
}

TEST(HttpMetricsTest, BandwidthAddsBytesPerDirection) {
  HttpMetrics m(100);
  m.record(sample());
  m.record(sample());
  const std::string text = render_workers({&m});
  const std::string labels = "route=\"1\",service=\"\",consumer=\"\",node=\"127.0.0.1\"} ";
  EXPECT_NE(text.find("apisix_bandwidth{type=\"ingress\"," + labels + "200\n"), std::string::npos);
  EXPECT_NE(text.find("apisix_bandwidth{type=\"egress\"," + labels + "500\n"), std::string::npos);
}

TEST(HttpMetricsTest, CapDropsNewLabelSetsAndKeepsCountingOldOnes) {
  // Cap 3: route 1 takes a status set and a route set, and the 404 a second status set.
  HttpMetrics m(3);
  m.record(sample("1", 200));
  m.record(sample("1", 404));
  EXPECT_EQ(m.series(), 3u);
  m.record(sample("2", 200));  // needs two new sets: dropped
  m.record(sample("1", 500));  // needs a new status set: dropped there, latency still counts
  m.record(sample("1", 200));
  EXPECT_EQ(m.dropped(), 2u);
  EXPECT_EQ(m.series(), 3u);
  const std::string text = render_workers({&m});
  EXPECT_NE(text.find(status_line("1", 200, 2)), std::string::npos) << text;
  EXPECT_NE(text.find(status_line("1", 404, 1)), std::string::npos);
  EXPECT_EQ(text.find("code=\"500\""), std::string::npos);
  EXPECT_EQ(text.find("route=\"2\""), std::string::npos);
  EXPECT_NE(text.find(latency_line("request", "count", "", "4")), std::string::npos);
  EXPECT_NE(text.find("\nsluice_prometheus_dropped_samples_total 2\n"), std::string::npos);
}

TEST(HttpMetricsTest, ZeroCapRecordsNothing) {
  HttpMetrics m(0);
  m.record(sample());
  EXPECT_EQ(m.dropped(), 1u);
  EXPECT_EQ(m.status_head(), nullptr);
  EXPECT_EQ(m.route_head(), nullptr);
}

TEST(HttpMetricsTest, LabelValuesThatConcatenateAlikeStayApart) {
  HttpMetrics m(100);
  HttpSample a = sample("ab");
  a.labels.service = "c";
  HttpSample b = sample("a");
  b.labels.service = "bc";
  m.record(a);
  m.record(b);
  EXPECT_EQ(m.series(), 4u);
}

}  // namespace
}  // namespace sluice::metrics
