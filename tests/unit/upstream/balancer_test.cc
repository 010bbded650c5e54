#include "upstream/balancer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "upstream/chash_balancer.h"
#include "upstream/ewma.h"
#include "upstream/least_conn.h"

namespace sluice::upstream {
namespace {

Upstream make(std::vector<std::pair<int, int>> weight_priority) {
  Upstream up;
  for (auto [w, p] : weight_priority) {
    Node n;
    n.weight = w;
    n.priority = p;
    n.resolved = true;
    up.nodes.push_back(n);
  }
  return up;
}

std::string sequence(RoundRobin& rr, const Upstream& up, int n, uint64_t exclude = 0) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    int k = rr.pick(up, exclude);
    s += k < 0 ? '-' : static_cast<char>('a' + k);
  }
  return s;
}

TEST(RoundRobinTest, SmoothWeightedOrderMatchesNginx) {
  RoundRobin rr;
  // nginx's documented example: weights 5, 1, 1 -> a a b a c a a.
  EXPECT_EQ(sequence(rr, make({{5, 0}, {1, 0}, {1, 0}}), 7), "aabacaa");
}

TEST(RoundRobinTest, ExactSplitAndNeverBunched) {
  RoundRobin rr;
  Upstream up = make({{1, 0}, {2, 0}});
  std::string s = sequence(rr, up, 30);
  EXPECT_EQ(std::count(s.begin(), s.end(), 'a'), 10);
  EXPECT_EQ(std::count(s.begin(), s.end(), 'b'), 20);
  EXPECT_EQ(s.find("bbb"), std::string::npos) << s;
}

TEST(RoundRobinTest, ZeroWeightAndUnresolvedNodesAreSkipped) {
  RoundRobin rr;
  Upstream up = make({{0, 0}, {1, 0}, {1, 0}});
  up.nodes[2].resolved = false;
  EXPECT_EQ(sequence(rr, up, 4), "bbbb");
}

TEST(RoundRobinTest, LowerPriorityOnlyWhenHigherGroupIsExhausted) {
  RoundRobin rr;
  Upstream up = make({{1, 0}, {1, 10}, {1, 10}});
  EXPECT_EQ(sequence(rr, up, 4), "bcbc");
  // Both high-priority nodes excluded (already tried): fall back to the low group.
  EXPECT_EQ(sequence(rr, up, 2, 0b110), "aa");
}

TEST(RoundRobinTest, ExcludeSkipsTriedNodes) {
  RoundRobin rr;
  Upstream up = make({{1, 0}, {1, 0}, {1, 0}});
  EXPECT_EQ(sequence(rr, up, 3, 0b001), "bcb");
  EXPECT_EQ(rr.pick(up, 0b111), -1);
}

TEST(RoundRobinTest, EmptyUpstreamPicksNothing) {
  RoundRobin rr;
  Upstream up;
  EXPECT_EQ(rr.pick(up), -1);
}

TEST(BalancerTest, MadeForTheUpstreamsType) {
  Upstream up = make({{1, 0}});
  EXPECT_NE(dynamic_cast<RoundRobin*>(make_balancer(up, 1).get()), nullptr);
  up.type = BalancerType::kChash;
  EXPECT_NE(dynamic_cast<ChashBalancer*>(make_balancer(up, 1).get()), nullptr);
  up.type = BalancerType::kLeastConn;
  EXPECT_NE(dynamic_cast<LeastConn*>(make_balancer(up, 1).get()), nullptr);
  up.type = BalancerType::kEwma;
  EXPECT_NE(dynamic_cast<Ewma*>(make_balancer(up, 1).get()), nullptr);
}

}  // namespace
}  // namespace sluice::upstream
