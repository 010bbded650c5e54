// traffic-split's upstreams in the snapshot: inline ones are built beside the routes' (their own
// balancer slot, APISIX's 15 s default timeouts), upstream_ids resolve to the snapshot's
// objects, a missing one is kept for a 502 at run time, and chains holding them are rebuilt with
// every snapshot rather than kept from the last.

#include <gtest/gtest.h>

#include <string>

#include "config/plugin_registry.h"
#include "config/snapshot_builder.h"
#include "config/standalone.h"
#include "plugins/traffic_split/traffic_split.h"

namespace sluice::config {
namespace split_test {

using plugins::traffic_split::TrafficSplit;

const char* kSet = R"(
upstreams:
  - id: u1
    nodes: {"127.0.0.1:1981": 1}
    timeout: {connect: 1, send: 2, read: 3}
routes:
  - id: 1
    uri: /a
    plugins:
      traffic-split:
        rules:
          - match:
              - vars: [["arg_x", "==", "1"]]
            weighted_upstreams:
              - upstream_id: u1
                weight: 3
              - upstream_id: gone
              - upstream:
                  nodes: {"127.0.0.1:1982": 1, "127.0.0.1:1983": 1}
                weight: 2
              - weight: 1
    upstream: {nodes: {"127.0.0.1:80": 1}}
#END
)";

const TrafficSplit* split_of(const snapshot::Snapshot& s) {
  const auto& entries = s.routes.at(0).chain->entries();
  return dynamic_cast<const TrafficSplit*>(entries.at(0).plugin.get());
}

TEST(TrafficSplitSnapshot, InlineUpstreamsJoinTheSnapshotAndIdsResolve) {
  auto set = parse_standalone(kSet);
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto built = build_snapshot(*set, dns, 1, &shared);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  const snapshot::Snapshot& s = *built->snapshot;
  // u1, the route's own, and the inline one of the plugin.
  ASSERT_EQ(s.upstreams.size(), 3u);
  const TrafficSplit* ts = split_of(s);
  ASSERT_NE(ts, nullptr);
  EXPECT_EQ(shared.upstreams, nullptr);  // lent only while building

  router::MatchContext m;  // no request: the rule's match fails, the route's upstream
  EXPECT_EQ(ts->rule_for(m), nullptr);

  std::vector<TrafficSplit::Choice> choices;
  {
    // Reach the rule through a request that matches it.
    http::RequestHead head;
    head.target = "/a?x=1";
    head.path = "/a";
    head.uri = "/a";
    head.query = "x=1";
    m.req = &head;
    const TrafficSplit::CompiledRule* r = ts->rule_for(m);
    ASSERT_NE(r, nullptr);
    choices = r->choices;
  }
  ASSERT_EQ(choices.size(), 4u);
  using Kind = TrafficSplit::Choice::Kind;
  EXPECT_EQ(choices[0].kind, Kind::kUpstream);
  EXPECT_EQ(choices[0].upstream, s.upstreams[0].get());  // u1 itself: its timeouts, health
  EXPECT_EQ(choices[1].kind, Kind::kMissing);
  EXPECT_EQ(choices[1].upstream_id, "gone");
  EXPECT_EQ(choices[2].kind, Kind::kUpstream);
  const upstream::Upstream* inline_up = choices[2].upstream;
  ASSERT_NE(inline_up, nullptr);
  EXPECT_EQ(inline_up->index, 2u);
  EXPECT_EQ(s.upstreams[2].get(), inline_up);
  EXPECT_EQ(inline_up->nodes.size(), 2u);
  EXPECT_EQ(inline_up->retries, 1);
  // APISIX's set_upstream: 15 s each when the inline upstream sets no timeout.
  EXPECT_EQ(inline_up->timeouts.connect_ms, 15000u);
  EXPECT_EQ(inline_up->timeouts.send_ms, 15000u);
  EXPECT_EQ(inline_up->timeouts.read_ms, 15000u);
  EXPECT_EQ(inline_up->id, "route/1 traffic-split rule 1 upstream 3");
  EXPECT_EQ(choices[3].kind, Kind::kRoute);
}

TEST(TrafficSplitSnapshot, ItsChainIsBuiltAgainWithEachSnapshot) {
  auto set = parse_standalone(kSet);
  ASSERT_TRUE(set.is_ok());
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto first = build_snapshot(*set, dns, 1, &shared);
  auto second = build_snapshot(*set, dns, 2, &shared);
  ASSERT_TRUE(first.is_ok() && second.is_ok());
  // The first chain points into the first snapshot's upstreams: never reused.
  EXPECT_NE(first->snapshot->routes[0].chain, second->snapshot->routes[0].chain);
}

TEST(TrafficSplitSnapshot, TheInlineUpstreamIsCheckedAsTheAdminApiChecksUpstreams) {
  const PluginInfo& info = plugins::traffic_split::info();
  auto check = [&](const char* conf) {
    return info.check(Json::parse(conf), plugin::PluginUse::kHttp).message();
  };
  EXPECT_EQ(
      check(R"({"rules":[{"weighted_upstreams":[{"upstream":{"nodes":{"127.0.0.1:1980":1}}}]}]})"),
      "");
  EXPECT_EQ(
      check(
          R"({"rules":[{"weighted_upstreams":[{"upstream":{"nodes":{"127.0.0.1:1980":1},"type":"x"}}]}]})"),
      R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "upstream" validation failed: property "type" validation failed: matches none of the enum values)");
  EXPECT_EQ(
      check(
          R"({"rules":[{"weighted_upstreams":[{"upstream":{"nodes":{"127.0.0.1:1980":1},"pass_host":"rewrite"}}]}]})"),
      R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "upstream" validation failed: `upstream_host` can't be empty when `pass_host` is `rewrite`)");
}

}  // namespace split_test
}  // namespace sluice::config
