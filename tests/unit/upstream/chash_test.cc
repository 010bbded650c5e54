#include <gtest/gtest.h>

#include <map>
#include <string>

#include "unit/upstream/upstream_fixture.h"
#include "upstream/chash_balancer.h"
#include "upstream/hash64.h"

namespace sluice::upstream {
namespace {

using testing::test_node;
using testing::upstream_of;

// Which node each of `keys` keys lands on, by node host.
std::vector<std::string> chash_owners(const Upstream& up, int keys) {
  ChashBalancer b;
  std::vector<std::string> out;
  for (int k = 0; k < keys; ++k) {
    int n = b.pick(up, {0, hash64("user-" + std::to_string(k)), 0});
    out.push_back(n < 0 ? "-" : up.nodes[n].host);
  }
  return out;
}

double moved_fraction(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  int moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    moved += a[i] != b[i] ? 1 : 0;
  }
  return static_cast<double>(moved) / a.size();
}

TEST(ChashTest, SameKeySameNode) {
  Upstream up = upstream_of(BalancerType::kChash, {{1, 0}, {1, 0}, {1, 0}});
  ChashBalancer b;
  int first = b.pick(up, {0, hash64("alice"), 0});
  ASSERT_GE(first, 0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(b.pick(up, {0, hash64("alice"), 0}), first);
  }
}

TEST(ChashTest, DistributionFollowsWeight) {
  Upstream up = upstream_of(BalancerType::kChash, {{1, 0}, {2, 0}, {1, 0}});
  std::map<std::string, int> count;
  for (const auto& h : chash_owners(up, 20000)) {
    ++count[h];
  }
  EXPECT_NEAR(count["10.0.0.1"] / 20000.0, 0.25, 0.05);
  EXPECT_NEAR(count["10.0.0.2"] / 20000.0, 0.50, 0.05);
  EXPECT_NEAR(count["10.0.0.3"] / 20000.0, 0.25, 0.05);
}

TEST(ChashTest, RemovingOrAddingOneNodeMovesAboutOneNth) {
  Upstream five = upstream_of(BalancerType::kChash, {{1, 0}, {1, 0}, {1, 0}, {1, 0}, {1, 0}});
  Upstream four = five;
  four.nodes.erase(four.nodes.begin() + 2);  // the middle one: indexes shift, hosts do not
  four.ring = ChashRing::build(four.nodes);
  auto on_five = chash_owners(five, 10000);
  auto on_four = chash_owners(four, 10000);
  const double n = 5;
  double removed = moved_fraction(on_five, on_four);
  EXPECT_GE(removed, 0.5 / n);
  EXPECT_LE(removed, 1.6 / n);
  double added = moved_fraction(on_four, on_five);
  EXPECT_GE(added, 0.5 / n);
  EXPECT_LE(added, 1.6 / n);
  // Only keys of the removed node move.
  for (size_t i = 0; i < on_five.size(); ++i) {
    if (on_five[i] != "10.0.0.3") {
      EXPECT_EQ(on_five[i], on_four[i]) << i;
    }
  }
}

TEST(ChashTest, ExcludedNodeWalksToTheNextOnTheRing) {
  Upstream up = upstream_of(BalancerType::kChash, {{1, 0}, {1, 0}, {1, 0}});
  ChashBalancer b;
  for (int k = 0; k < 50; ++k) {
    uint64_t h = hash64(std::to_string(k));
    int first = b.pick(up, {0, h, 0});
    int second = b.pick(up, {uint64_t{1} << first, h, 0});
    ASSERT_GE(second, 0);
    EXPECT_NE(second, first);
    // Deterministic: a retry of the same key goes to the same second node.
    EXPECT_EQ(b.pick(up, {uint64_t{1} << first, h, 0}), second);
    EXPECT_EQ(b.pick(up, {0b111, h, 0}), -1);
  }
}

TEST(ChashTest, UnresolvedAndZeroWeightNodesAreSkipped) {
  Upstream up = upstream_of(BalancerType::kChash, {{1, 0}, {0, 0}, {1, 0}});
  up.nodes[0].resolved = false;
  for (const auto& h : chash_owners(up, 200)) {
    EXPECT_EQ(h, "10.0.0.3");
  }
}

TEST(ChashTest, HighestPriorityGroupWithAnEligibleNode) {
  Upstream up = upstream_of(BalancerType::kChash, {{1, 0}, {1, 10}, {1, 0}});
  ChashBalancer b;
  for (int k = 0; k < 50; ++k) {
    uint64_t h = hash64(std::to_string(k));
    EXPECT_EQ(b.pick(up, {0, h, 0}), 1);
    int low = b.pick(up, {0b010, h, 0});
    EXPECT_TRUE(low == 0 || low == 2) << low;
  }
}

TEST(ChashTest, EmptyRingPicksNothing) {
  Upstream up = upstream_of(BalancerType::kChash, {});
  ChashBalancer b;
  EXPECT_EQ(b.pick(up, {0, 1, 0}), -1);
}

TEST(ChashTest, LargeWeightsAreScaledDown) {
  Upstream up;
  up.nodes = {test_node("a", 1000000), test_node("b", 999999)};
  ChashRing ring = ChashRing::build(up.nodes);
  EXPECT_LE(ring.size(), ChashRing::kMaxPoints + 2);
  EXPECT_GT(ring.size(), 1000u);
}

}  // namespace
}  // namespace sluice::upstream
