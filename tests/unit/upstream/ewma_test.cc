#include "upstream/ewma.h"

#include <gtest/gtest.h>

#include <map>

#include "unit/upstream/upstream_fixture.h"

namespace sluice::upstream {
namespace {

using testing::upstream_of;

constexpr uint64_t kT0 = 1000000;  // a monotonic clock far from 0

TEST(EwmaTest, NoDataSpreadsOverNodes) {
  Upstream up = upstream_of(BalancerType::kEwma, {{1, 0}, {1, 0}, {1, 0}});
  Ewma e(42);
  std::map<int, int> count;
  for (int i = 0; i < 3000; ++i) {
    ++count[e.pick(up, {0, 0, kT0})];
  }
  for (int n = 0; n < 3; ++n) {
    EXPECT_NEAR(count[n], 1000, 150) << n;
  }
}

TEST(EwmaTest, PrefersTheFastNode) {
  Upstream up = upstream_of(BalancerType::kEwma, {{1, 0}, {1, 0}});
  Ewma e(7);
  e.finished(up, 0, Outcome::kOk, 300, kT0);
  e.finished(up, 1, Outcome::kOk, 5, kT0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(e.pick(up, {0, 0, kT0 + 10}), 1);
  }
  // Excluded, the fast node gives way to the slow one.
  EXPECT_EQ(e.pick(up, {0b10, 0, kT0 + 10}), 0);
  EXPECT_EQ(e.pick(up, {0b11, 0, kT0 + 10}), -1);
}

TEST(EwmaTest, ScoreDecaysSoASlowNodeRecovers) {
  Upstream up = upstream_of(BalancerType::kEwma, {{1, 0}, {1, 0}});
  Ewma e(7);
  e.finished(up, 0, Outcome::kOk, 1000, kT0);
  EXPECT_DOUBLE_EQ(e.score(0, kT0), 1000);
  // After one decay time the average weighs e^-1 of what it was.
  EXPECT_NEAR(e.score(0, kT0 + 10000), 1000 * 0.36788, 0.5);
  // A new sample mixes in by the time elapsed, not by the number of samples.
  e.finished(up, 0, Outcome::kOk, 10, kT0 + 10000);
  EXPECT_NEAR(e.score(0, kT0 + 10000), 1000 * 0.36788 + 10 * 0.63212, 0.5);
  // Long idle: the score goes back to about 0, and the node is picked again.
  e.finished(up, 1, Outcome::kOk, 5, kT0 + 200000);
  EXPECT_LT(e.score(0, kT0 + 200000), 1);
  std::map<int, int> count;
  for (int i = 0; i < 200; ++i) {
    ++count[e.pick(up, {0, 0, kT0 + 200000})];
  }
  EXPECT_GT(count[0], 50);
}

TEST(EwmaTest, ConnectFailureIsPenalised) {
  Upstream up = upstream_of(BalancerType::kEwma, {{1, 0}, {1, 0}});
  Ewma e(3);
  e.finished(up, 0, Outcome::kConnectFailed, 0, kT0);
  EXPECT_DOUBLE_EQ(e.score(0, kT0), Ewma::kConnectFailureMs);
  EXPECT_EQ(e.pick(up, {0, 0, kT0}), 1);
}

TEST(EwmaTest, PriorityGroupsAndSkippedNodes) {
  Upstream up = upstream_of(BalancerType::kEwma, {{1, 0}, {1, 5}, {0, 5}});
  Ewma e(3);
  e.finished(up, 1, Outcome::kOk, 5000, kT0);  // slow, but the only high-priority node
  EXPECT_EQ(e.pick(up, {0, 0, kT0}), 1);
  EXPECT_EQ(e.pick(up, {0b10, 0, kT0}), 0);
}

}  // namespace
}  // namespace sluice::upstream
