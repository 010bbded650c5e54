#include "health/set.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/log.h"

namespace sluice::health {
namespace {

std::vector<Target> targets(int n) {
  std::vector<Target> out;
  for (int i = 0; i < n; ++i) {
    Target t;
    t.ip = "127.0.0.1";
    t.port = static_cast<uint16_t>(9001 + i);
    io::make_sockaddr(t.ip, t.port, &t.addr);
    t.host_header = "127.0.0.1:" + std::to_string(t.port);
    out.push_back(t);
  }
  return out;
}

std::shared_ptr<const Checks> checks(bool passive) {
  Checks c;
  c.active.healthy.successes = 2;
  c.active.unhealthy.http_failures = 3;
  c.active.unhealthy.tcp_failures = 2;
  c.active.unhealthy.timeouts = 2;
  if (passive) {
    c.passive.emplace();
    c.passive->unhealthy.http_failures = 2;
    c.passive->unhealthy.timeouts = 1;
    c.passive->unhealthy.tcp_failures = 0;  // 0: never trips
  }
  return std::make_shared<const Checks>(c);
}

TEST(HealthSet, NodesStartHealthy) {
  Set s("/apisix/upstreams/1", checks(false), targets(3));
  EXPECT_TRUE(s.healthy(0) && s.healthy(1) && s.healthy(2));
  EXPECT_EQ(s.exclude_mask(), 0u);
}

TEST(HealthSet, ActiveThresholdsPerKind) {
  Set s("u", checks(false), targets(3));
  s.probe_failure(1, Failure::kTcp);
  EXPECT_TRUE(s.healthy(1));
  s.probe_failure(1, Failure::kTcp);  // tcp_failures = 2
  EXPECT_FALSE(s.healthy(1));
  EXPECT_EQ(s.exclude_mask(), 0b010u);

  s.probe_failure(2, Failure::kHttp);
  s.probe_failure(2, Failure::kHttp);
  EXPECT_TRUE(s.healthy(2));
  s.probe_failure(2, Failure::kHttp);  // http_failures = 3
  EXPECT_FALSE(s.healthy(2));
  EXPECT_EQ(s.exclude_mask(), 0b110u);
}

TEST(HealthSet, SuccessesBringANodeBackAndResetFailures) {
  Set s("u", checks(false), targets(2));
  s.probe_failure(0, Failure::kTimeout);
  s.probe_failure(0, Failure::kTimeout);
  ASSERT_FALSE(s.healthy(0));
  s.probe_success(0);
  EXPECT_FALSE(s.healthy(0));
  s.probe_failure(0, Failure::kTcp);  // a failure restarts the run of successes
  s.probe_success(0);
  EXPECT_FALSE(s.healthy(0));
  s.probe_success(0);  // successes = 2 in a row
  EXPECT_TRUE(s.healthy(0));
  EXPECT_EQ(s.exclude_mask(), 0u);
  // One success cleared the failure counts: a fresh run is needed to go down again.
  s.probe_failure(0, Failure::kTimeout);
  s.probe_success(0);
  s.probe_failure(0, Failure::kTimeout);
  EXPECT_TRUE(s.healthy(0));
}

TEST(HealthSet, PassiveTakesDownNeverBringsBack) {
  Set s("u", checks(true), targets(2));
  s.report_status(0, 500);
  s.report_status(0, 200);  // a success ends the run of failures
  s.report_status(0, 500);
  EXPECT_TRUE(s.healthy(0));
  s.report_status(0, 503);
  EXPECT_FALSE(s.healthy(0));
  for (int i = 0; i < 10; ++i) {
    s.report_status(0, 200);
  }
  EXPECT_FALSE(s.healthy(0));
  s.probe_success(0);
  s.probe_success(0);
  EXPECT_TRUE(s.healthy(0));
}

TEST(HealthSet, PassiveKindsAndZeroThreshold) {
  Set s("u", checks(true), targets(2));
  for (int i = 0; i < 20; ++i) {
    s.report_failure(1, Failure::kTcp);  // tcp_failures = 0 never trips
  }
  EXPECT_TRUE(s.healthy(1));
  s.report_failure(1, Failure::kTimeout);  // timeouts = 1
  EXPECT_FALSE(s.healthy(1));
  s.report_status(0, 404);  // in neither passive list: counts for nothing
  s.report_status(0, 404);
  EXPECT_TRUE(s.healthy(0));
}

TEST(HealthSet, WithoutPassiveReportsAreIgnored) {
  Set s("u", checks(false), targets(2));
  for (int i = 0; i < 20; ++i) {
    s.report_status(0, 500);
    s.report_failure(0, Failure::kTcp);
  }
  EXPECT_TRUE(s.healthy(0));
  s.report_status(-1, 500);  // out of range is harmless
  s.report_status(7, 500);
}

TEST(HealthSet, AllUnhealthyExcludesNothing) {
  Set s("u", checks(false), targets(3));
  for (size_t i = 0; i < 3; ++i) {
    s.probe_failure(i, Failure::kTcp);
    s.probe_failure(i, Failure::kTcp);
  }
  EXPECT_FALSE(s.healthy(0) || s.healthy(1) || s.healthy(2));
  EXPECT_EQ(s.exclude_mask(), 0u);  // APISIX balances across all then
  s.probe_success(2);
  s.probe_success(2);
  EXPECT_EQ(s.exclude_mask(), 0b011u);
}

TEST(HealthSet, UnpickableNodesDoNotCountAsHealthy) {
  auto t = targets(3);
  t[2].pickable = false;  // weight 0 or unresolved: the balancer never picks it anyway
  Set s("u", checks(false), t);
  for (size_t i = 0; i < 2; ++i) {
    s.probe_failure(i, Failure::kTcp);
    s.probe_failure(i, Failure::kTcp);
  }
  EXPECT_EQ(s.exclude_mask(), 0u);
}

TEST(HealthSet, InheritKeepsNodesAtTheSameAddress) {
  Set old("u", checks(false), targets(3));
  old.probe_failure(1, Failure::kTcp);
  old.probe_failure(1, Failure::kTcp);
  auto t = targets(3);
  std::swap(t[0], t[1]);  // node 9002 moved to index 0
  Set s("u", checks(false), t);
  s.inherit(old);
  EXPECT_FALSE(s.healthy(0));
  EXPECT_TRUE(s.healthy(1));
  EXPECT_EQ(s.exclude_mask(), 0b001u);
}

// Workers report and read while the checker probes: the flag and the mask end up agreeing.
TEST(HealthSet, ConcurrentReportsAndReads) {
  const int saved_level = common::g_log_level.load();
  common::set_log_level(common::LogLevel::kError);  // thousands of flips, each logged
  Set s("u", checks(true), targets(4));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      while (reads.load() == 0) {  // start once the reader runs
      }
      for (int i = 0; i < 20000; ++i) {
        s.report_status(i % 4, (i + w) % 3 == 0 ? 500 : 200);
        if (i % 16 == 0) {
          s.report_failure((i + 1) % 4, Failure::kTimeout);
        }
      }
    });
  }
  threads.emplace_back([&] {  // the checker brings nodes back while workers take them out
    while (reads.load() == 0) {
    }
    for (int i = 0; i < 20000; ++i) {
      s.probe_success(i % 4);
      s.probe_success(i % 4);
    }
  });
  std::thread reader([&] {
    while (!stop.load()) {
      uint64_t m = s.exclude_mask();
      EXPECT_NE(m, 0b1111u);  // all down reads as "exclude nothing"
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (auto& t : threads) {
    t.join();
  }
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0u);
  uint64_t expect = 0;
  for (size_t i = 0; i < 4; ++i) {
    expect |= s.healthy(i) ? 0 : uint64_t{1} << i;
  }
  EXPECT_EQ(s.exclude_mask(), expect == 0b1111u ? 0u : expect);
  common::set_log_level(static_cast<common::LogLevel>(saved_level));
}

}  // namespace
}  // namespace sluice::health
