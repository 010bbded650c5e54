// The load generator against real sockets: the built-in upstream, a dead port, a listener
// that never answers. Rates are paced, so these assert counts, never machine speed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "bench/load_run.h"
#include "bench_test_client.h"

namespace sluice::bench {
namespace {

LoadOptions load_options_for(uint16_t port, double duration_s, int connections) {
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/hello";
  o.duration_s = duration_s;
  o.connections = connections;
  return o;
}

LoadResult run_ok(const LoadOptions& o) {
  auto r = run_load(o);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  return r.is_ok() ? std::move(*r) : LoadResult{};
}

uint64_t total_errors(const LoadStats& s) {
  uint64_t n = 0;
  for (uint64_t e : s.errors) {
    n += e;
  }
  return n;
}

TEST(LoadTest, ClosedLoopCompletesRequestsWithoutErrors) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  LoadOptions o = load_options_for(up->port(), 0.3, 4);
  LoadResult r = run_ok(o);
  const LoadStats& s = r.stats;
  EXPECT_GT(s.requests, 0u);
  EXPECT_EQ(total_errors(s), 0u);
  EXPECT_EQ(s.status[1], s.requests);  // all 2xx
  EXPECT_EQ(s.sent, s.requests);       // in-flight ones were drained
  EXPECT_EQ(s.unsent, 0u);
  EXPECT_EQ(s.latency.count(), s.requests);
  EXPECT_EQ(s.bytes_read, s.requests * UpstreamResponses("hello world\n").keep_alive.size() +
                              s.requests * 12);  // head + "hello world\n"
  EXPECT_GE(r.elapsed_s, 0.3);
  EXPECT_LT(r.elapsed_s, 2.0);

  nlohmann::ordered_json j = load_report(o, r);
  EXPECT_EQ(j["mode"], "closed");
  EXPECT_TRUE(j["rate"].is_null());
  EXPECT_EQ(j["requests"], s.requests);
  EXPECT_EQ(j["status"]["2xx"], s.requests);
  EXPECT_EQ(j["non2xx"], 0);
  EXPECT_EQ(j["errors"]["timeout"], 0);
  for (const char* key :
       {"min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99.9", "p99.99"}) {
    EXPECT_TRUE(j["latency_us"].contains(key)) << key;
  }
  uint64_t in_buckets = 0;
  for (const auto& b : j["histogram"]) {
    EXPECT_LT(b[0].get<double>(), b[1].get<double>());
    in_buckets += b[2].get<uint64_t>();
  }
  EXPECT_EQ(in_buckets, s.requests);
  std::string keys;
  for (const auto& [k, v] : j.items()) {
    keys += k + ",";
  }
  EXPECT_EQ(keys,
            "mode,url,connections,threads,duration_s,rate,requests,rps,elapsed_s,sent,unsent,"
            "status,non2xx,errors,bytes_read,latency_us,histogram,");
}

TEST(LoadTest, OpenLoopSendsTheScheduledNumberOfRequests) {
  auto up = start_upstream();
  ASSERT_TRUE(up);
  LoadOptions o = load_options_for(up->port(), 1.0, 8);
  o.rate = 1000;
  o.threads = 2;
  LoadResult r = run_ok(o);
  const LoadStats& s = r.stats;
  EXPECT_NEAR(static_cast<double>(s.sent), 1000.0, 100.0);
  EXPECT_EQ(s.unsent, 0u);
  EXPECT_EQ(s.requests, s.sent);
  EXPECT_EQ(total_errors(s), 0u);
  EXPECT_EQ(load_report(o, r)["mode"], "open");
  EXPECT_EQ(load_report(o, r)["rate"], 1000.0);
}

TEST(LoadTest, SyntheticServerBelowCapacityShowsItsServiceTime) {
  auto up = start_upstream(/*service_us=*/2000);  // capacity 500/s
  ASSERT_TRUE(up);
  LoadOptions o = load_options_for(up->port(), 1.0, 4);
  o.rate = 250;
  LoadResult r = run_ok(o);
  const Histogram& h = r.stats.latency;
  EXPECT_NEAR(static_cast<double>(r.stats.requests), 250.0, 25.0);
  EXPECT_EQ(total_errors(r.stats), 0u);
  EXPECT_GE(h.min(), 2'000'000u);  // nothing completes faster than the service time
  EXPECT_GE(h.value_at_percentile(99), 2'000'000u);
  // Generous: a shared machine stalls a thread for tens of ms now and then, and the requests
  // due meanwhile queue behind it, and under qemu (the arm64 leg, 9.4 ms seen on a loaded
  // host) every call costs more; still far below the overload test's 100 ms.
  EXPECT_LE(h.value_at_percentile(50), 2'000'000u + 25'000'000u);
  EXPECT_LE(h.value_at_percentile(99), 2'000'000u + 50'000'000u);
}

TEST(LoadTest, SyntheticServerOverloadIsMeasuredWithoutCoordinatedOmission) {
  auto up = start_upstream(/*service_us=*/2000);  // capacity 500/s, offered 1000/s
  ASSERT_TRUE(up);
  LoadOptions o = load_options_for(up->port(), 1.0, 4);
  o.rate = 1000;
  LoadResult r = run_ok(o);
  // A closed loop over 4 connections would report ~8 ms; measured from the intended send
  // times the queue that builds up over the second shows.
  EXPECT_GT(r.stats.latency.value_at_percentile(99), 100'000'000u);
  EXPECT_GT(r.stats.unsent, 0u);
  EXPECT_EQ(r.stats.latency.count(), r.stats.requests + r.stats.unsent);
}

TEST(LoadTest, CountsConnectErrorsWhenNothingListens) {
  LoadOptions o = load_options_for(unused_port(), 0.2, 2);
  o.timeout_ms = 200;
  LoadResult r = run_ok(o);
  EXPECT_GE(r.stats.error(LoadError::kConnect), 1u);
  EXPECT_EQ(r.stats.requests, 0u);
  EXPECT_EQ(r.stats.sent, 0u);
}

TEST(LoadTest, CountsTimeoutsWhenTheServerNeverAnswers) {
  uint16_t port = 0;
  int fd = listen_without_accept(&port);
  LoadOptions o = load_options_for(port, 0.3, 1);
  o.timeout_ms = 100;
  LoadResult r = run_ok(o);
  EXPECT_GE(r.stats.error(LoadError::kTimeout), 2u);  // ~100 ms each, then reconnect
  EXPECT_EQ(r.stats.requests, 0u);
  EXPECT_EQ(r.stats.error(LoadError::kConnect), 0u);
  close(fd);
}

TEST(LoadTest, RejectsUrlsItCannotReach) {
  LoadOptions o;
  o.url = "http://example.com/";
  auto r = run_load(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("IPv4 literal"), std::string::npos);
}

}  // namespace
}  // namespace sluice::bench
