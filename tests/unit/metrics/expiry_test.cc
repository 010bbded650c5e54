// plugin_attr.prometheus.metrics.<family>.expire: label sets idle that long leave the export,
// their cells are freed (or kept until a scrape in progress ends), and the cap admits new sets.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"
#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::count_of;
using testing::sample;
using testing::status_line;

std::shared_ptr<const HttpLayout> expiring(uint64_t expire_ms, bool cpu = false) {
  auto l = std::make_shared<HttpLayout>();
  l->expire_ms = expire_ms;
  l->cpu = cpu;
  return l;
}

HttpSample at(uint64_t now_ms, std::string_view route = "1", int code = 200) {
  HttpSample s = sample(route, code);
  s.now_ms = now_ms;
  return s;
}

std::string render_at(const HttpMetrics& m, uint64_t now_ms) {
  const HttpMetrics* workers[] = {&m};
  return render_http(workers, now_ms);
}

TEST(ExpiryTest, IdleSeriesLeavesTheExportAfterExpire) {
  HttpMetrics m(100, expiring(1000));
  m.record(at(10'000, "1"));
  m.record(at(10'500, "2"));
  EXPECT_NE(render_at(m, 10'999).find(status_line("1", 200, 1)), std::string::npos);
  const std::string later = render_at(m, 11'000);  // route 1 idle 1000 ms, route 2 500 ms
  EXPECT_EQ(later.find(status_line("1", 200, 1)), std::string::npos);
  EXPECT_NE(later.find(status_line("2", 200, 1)), std::string::npos);
  EXPECT_EQ(count_of(later, "apisix_bandwidth{type=\"ingress\""), 1u);
  EXPECT_EQ(count_of(later, "apisix_http_latency_count{type=\"request\""), 1u);
}

TEST(ExpiryTest, ZeroNeverExpires) {
  HttpMetrics m(100, expiring(0));
  m.record(at(1, "1"));
  m.record(at(1'000'000'000, "2"));
  EXPECT_NE(render_at(m, 2'000'000'000).find(status_line("1", 200, 1)), std::string::npos);
  EXPECT_EQ(m.series(), 4u);
}

TEST(ExpiryTest, RecordedAgainBeforeExpiryKeepsCounting) {
  HttpMetrics m(100, expiring(1000));
  m.record(at(10'000));
  m.record(at(10'999));
  m.record(at(11'998));  // 999 ms after the last one
  EXPECT_NE(render_at(m, 12'000).find(status_line("1", 200, 3)), std::string::npos);
}

TEST(ExpiryTest, RecordedAfterExpiryStartsAFreshSeries) {
  HttpMetrics m(100, expiring(1000));
  m.record(at(10'000));
  m.record(at(10'100));
  m.record(at(11'100));  // idle exactly 1000 ms: the old set is gone, this is a new one
  const std::string text = render_at(m, 11'100);
  EXPECT_NE(text.find(status_line("1", 200, 1)), std::string::npos);
  EXPECT_EQ(count_of(text, "apisix_http_status{"), 1u);
  EXPECT_EQ(m.series(), 2u);  // the status set and its route set, fresh
}

TEST(ExpiryTest, SweepFreesIdleCellsAndTheCapAdmitsNewSets) {
  HttpMetrics m(4, expiring(1000));  // two samples of new routes fill it
  m.record(at(10'000, "1"));
  m.record(at(10'000, "2"));
  m.record(at(10'200, "3"));
  EXPECT_EQ(m.dropped(), 1u);
  EXPECT_EQ(m.series(), 4u);
  // A second later the first two are idle: the next sample's sweep frees them.
  m.record(at(11'050, "3"));
  EXPECT_EQ(m.series(), 2u);
  EXPECT_EQ(m.dropped(), 1u);
  EXPECT_EQ(m.retired(), 0u);  // no scrape was walking: freed at once
  m.record(at(11'060, "3"));
  EXPECT_EQ(m.dropped(), 1u);
  EXPECT_NE(render_at(m, 11'060).find(status_line("3", 200, 2)), std::string::npos);
}

TEST(ExpiryTest, StatusSetsOfOneRouteSetExpireWithIt) {
  HttpMetrics m(100, expiring(1000));
  m.record(at(10'000, "1", 200));
  m.record(at(10'600, "1", 404));  // the route set is touched again by the 404
  m.sweep(11'000);                 // the 200 set is idle, its route set is not
  EXPECT_EQ(m.series(), 2u);
  m.record(at(11'100, "1", 404));
  const std::string text = render_at(m, 11'100);
  EXPECT_NE(text.find(status_line("1", 404, 2)), std::string::npos);
  EXPECT_EQ(text.find("code=\"200\""), std::string::npos);
  EXPECT_NE(text.find("apisix_http_latency_count{type=\"request\",route=\"1\",service=\"\","
                      "consumer=\"\",node=\"127.0.0.1\"} 3"),
            std::string::npos);
  m.record(at(12'200, "1", 200));  // everything idle: a fresh 200 set on a fresh route set
  EXPECT_EQ(m.series(), 2u);
  EXPECT_NE(render_at(m, 12'200).find("apisix_http_latency_count{type=\"request\",route=\"1\","
                                      "service=\"\",consumer=\"\",node=\"127.0.0.1\"} 1"),
            std::string::npos);
}

TEST(ExpiryTest, ARetiredSetOutlivesTheScrapeWalkingIt) {
  HttpMetrics m(100, expiring(1000));
  m.record(at(10'000, "1"));
  m.guard().begin();  // a scrape is walking
  m.sweep(11'000);
  EXPECT_EQ(m.series(), 0u);
  EXPECT_EQ(m.retired(), 2u);           // kept: the walk may be on them
  EXPECT_EQ(m.status_head(), nullptr);  // unlinked: a walk starting now does not see them
  m.guard().end();
  m.record(at(11'001, "2"));  // the sweep after the scrape frees them
  m.sweep(11'001);
  EXPECT_EQ(m.retired(), 0u);
}

TEST(ExpiryTest, AccountingFamiliesFollowTheRouteSets) {
  HttpMetrics m(100, expiring(1000, true));
  HttpSample s = at(10'000, "1");
  s.cpu_ns = 1'500'000;
  m.record(s);
  s.now_ms = 10'400;
  m.record(s);
  std::string text = render_at(m, 10'500);
  EXPECT_NE(text.find("sluice_route_cpu_seconds_total{route=\"1\",service=\"\",consumer=\"\"} "
                      "0.003\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_route_bytes_total{route=\"1\",service=\"\",consumer=\"\","
                      "direction=\"ingress\"} 200\n"),
            std::string::npos);
  EXPECT_NE(text.find("sluice_route_bytes_total{route=\"1\",service=\"\",consumer=\"\","
                      "direction=\"egress\"} 500\n"),
            std::string::npos);
  text = render_at(m, 11'400);
  EXPECT_EQ(text.find("sluice_route_cpu_seconds_total{"), std::string::npos);
  EXPECT_EQ(text.find("sluice_route_bytes_total{"), std::string::npos);
}

TEST(ExpiryTest, NoCpuFamilyWithoutAccounting) {
  HttpMetrics m(100, expiring(0, false));
  m.record(at(1));
  const std::string text = render_at(m, 1);
  EXPECT_EQ(text.find("sluice_route_cpu_seconds_total"), std::string::npos);
  EXPECT_NE(text.find("sluice_route_bytes_total{"), std::string::npos);
}

// The worker retires and makes sets while a scraper walks: run under TSan and ASan. Every
// sample lands in a set that is either shown or retired, never in a freed one.
TEST(ExpiryTest, WorkerRetiresWhileAScraperWalks) {
  HttpMetrics m(64, expiring(5));
  std::atomic<bool> done{false};
  std::thread worker([&] {
    const std::string routes[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    for (uint64_t i = 0; i < 40000; ++i) {
      m.record(at(i / 4, routes[i % 8], i % 3 == 0 ? 500 : 200));  // ms advance every 4
    }
    done.store(true);
  });
  const HttpMetrics* workers[] = {&m};
  size_t renders = 0;
  while (!done.load() || renders == 0) {
    const std::string text = render_http(workers, 0);  // shows whatever is held
    EXPECT_NE(text.find("apisix_http_status"), std::string::npos);
    ++renders;
  }
  worker.join();
  EXPECT_LE(m.series(), 64u);
  const std::string last = render_http(workers, 20'000);  // idle 5 ms and more: nothing shown
  EXPECT_EQ(count_of(last, "apisix_http_status{"), 0u);
}

}  // namespace
}  // namespace sluice::metrics
