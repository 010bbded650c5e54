#include "upstream/least_conn.h"

#include <gtest/gtest.h>

#include <map>

#include "unit/upstream/upstream_fixture.h"

namespace sluice::upstream {
namespace {

using testing::upstream_of;

// Picks and starts a try, as the exchange does.
int start_try(LeastConn& lc, const Upstream& up, uint64_t exclude = 0) {
  int n = lc.pick(up, {exclude, 0, 0});
  if (n >= 0) {
    lc.started(up, n);
  }
  return n;
}

TEST(LeastConnTest, EqualIdleNodesShareTheLoad) {
  Upstream up = upstream_of(BalancerType::kLeastConn, {{1, 0}, {1, 0}, {1, 0}});
  LeastConn lc;
  std::map<int, int> count;
  for (int i = 0; i < 30; ++i) {
    int n = start_try(lc, up);
    ++count[n];
    lc.finished(up, n, Outcome::kOk, 1, 0);  // each done before the next: all stay idle
  }
  EXPECT_EQ(count[0], 10);
  EXPECT_EQ(count[1], 10);
  EXPECT_EQ(count[2], 10);
}

TEST(LeastConnTest, PrefersTheIdleNode) {
  Upstream up = upstream_of(BalancerType::kLeastConn, {{1, 0}, {1, 0}});
  LeastConn lc;
  int busy = start_try(lc, up);  // a slow request holds this node
  for (int i = 0; i < 5; ++i) {
    int n = start_try(lc, up);
    EXPECT_NE(n, busy);
    lc.finished(up, n, Outcome::kOk, 1, 0);
  }
  lc.finished(up, busy, Outcome::kFailed, 1, 0);
  EXPECT_EQ(lc.active(busy), 0u);
}

TEST(LeastConnTest, InFlightSplitFollowsWeight) {
  Upstream up = upstream_of(BalancerType::kLeastConn, {{2, 0}, {1, 0}});
  LeastConn lc;
  std::map<int, int> count;
  for (int i = 0; i < 30; ++i) {
    ++count[start_try(lc, up)];  // none finishes: (active + 1) / weight decides
  }
  EXPECT_EQ(count[0], 20);
  EXPECT_EQ(count[1], 10);
}

TEST(LeastConnTest, ExcludeAndPriority) {
  Upstream up = upstream_of(BalancerType::kLeastConn, {{1, 0}, {1, 5}, {1, 5}});
  LeastConn lc;
  EXPECT_EQ(lc.pick(up, {0b010, 0, 0}), 2);
  EXPECT_EQ(lc.pick(up, {0b110, 0, 0}), 0);
  EXPECT_EQ(lc.pick(up, {0b111, 0, 0}), -1);
  up.nodes[1].resolved = false;
  up.nodes[2].weight = 0;
  EXPECT_EQ(lc.pick(up, {0, 0, 0}), 0);
}

}  // namespace
}  // namespace sluice::upstream
