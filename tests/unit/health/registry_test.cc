#include "health/registry.h"

#include <gtest/gtest.h>

namespace sluice::health {
namespace {

std::vector<Target> two_nodes(uint16_t first = 9001) {
  std::vector<Target> out(2);
  for (uint16_t i = 0; i < 2; ++i) {
    out[i].ip = "127.0.0.1";
    out[i].port = static_cast<uint16_t>(first + i);
    out[i].host_header = "h";
  }
  return out;
}

auto conf() { return std::make_shared<const Checks>(); }

TEST(HealthRegistry, SameUpstreamKeepsItsStateAcrossBuilds) {
  Registry r;
  r.begin();
  SetPtr a = r.get("1", "/apisix/upstreams/1", "{}", conf(), two_nodes());
  r.commit();
  a->probe_failure(0, Failure::kTcp);
  a->probe_failure(0, Failure::kTcp);
  r.begin();  // an unrelated change rebuilds the snapshot
  SetPtr b = r.get("1", "/apisix/upstreams/1", "{}", conf(), two_nodes());
  r.commit();
  EXPECT_EQ(a, b);
  EXPECT_FALSE(b->healthy(0));
  ASSERT_EQ(r.live().size(), 1u);
}

TEST(HealthRegistry, ChangedChecksStartFresh) {
  Registry r;
  r.begin();
  SetPtr a = r.get("1", "n", "{}", conf(), two_nodes());
  r.commit();
  a->probe_failure(0, Failure::kTcp);
  a->probe_failure(0, Failure::kTcp);
  r.begin();
  SetPtr b = r.get("1", "n", R"({"active":{}})", conf(), two_nodes());
  r.commit();
  EXPECT_NE(a, b);
  EXPECT_TRUE(b->healthy(0));
}

TEST(HealthRegistry, ChangedNodesKeepTheNodesThatStayed) {
  Registry r;
  r.begin();
  SetPtr a = r.get("1", "n", "{}", conf(), two_nodes(9001));  // 9001, 9002
  r.commit();
  a->probe_failure(1, Failure::kTcp);
  a->probe_failure(1, Failure::kTcp);
  r.begin();
  SetPtr b = r.get("1", "n", "{}", conf(), two_nodes(9002));  // 9002, 9003
  r.commit();
  EXPECT_NE(a, b);
  EXPECT_FALSE(b->healthy(0));
  EXPECT_TRUE(b->healthy(1));
}

TEST(HealthRegistry, UncommittedBuildChangesNothingAndDroppedSetsGo) {
  Registry r;
  r.begin();
  SetPtr a = r.get("1", "n", "{}", conf(), two_nodes());
  r.get("2", "m", "{}", conf(), two_nodes());
  r.commit();
  r.begin();
  r.get("1", "n", R"({"x":1})", conf(), two_nodes());  // a build that fails: no commit
  r.begin();
  SetPtr again = r.get("1", "n", "{}", conf(), two_nodes());
  r.commit();
  EXPECT_EQ(a, again);
  ASSERT_EQ(r.live().size(), 1u);  // upstream 2 is gone
}

}  // namespace
}  // namespace sluice::health
