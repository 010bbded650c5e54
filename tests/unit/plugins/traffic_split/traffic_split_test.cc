// traffic-split: APISIX's schema texts, the weighted choice (smooth weighted round robin over a
// rule's upstreams), and which rule a request takes (APISIX's access() walk).

#include "plugins/traffic_split/traffic_split.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "plugins/traffic_split/config.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::traffic_split {
namespace {

using plugin::Json;
using router::testing::FakeRequest;

struct Case {
  const char* conf;
  const char* error;  // "" when valid
};

TEST(TrafficSplitConfig, Info) {
  EXPECT_EQ(info().name, "traffic-split");
  EXPECT_EQ(info().priority, 966);
  EXPECT_FALSE(info().stream);
  Json schema = Json::parse(info().schema);
  auto wu = schema["properties"]["rules"]["items"]["properties"]["weighted_upstreams"];
  EXPECT_EQ(wu["minItems"], 1);
  EXPECT_EQ(wu["maxItems"], 20);
  EXPECT_EQ(wu["items"]["properties"]["weight"]["minimum"], 0);
  EXPECT_EQ(wu["default"], Json::parse(R"([{"weight":1}])"));
}

TEST(TrafficSplitConfig, SchemaTexts) {
  const Case cases[] = {
      {R"({})", ""},
      {R"({"rules":[]})", ""},
      {R"({"rules":[{"weighted_upstreams":[{"weight":2},{"upstream_id":"u1","weight":0}]}]})", ""},
      {R"({"rules":[{"match":[{"vars":[["http_release","==","new_release"]]}]}]})", ""},
      {R"({"rules":[{"match":[{}]}]})", ""},
      {R"({"rule":[]})", "additional properties forbidden, found rule"},
      {R"({"rules":{}})",
       R"(property "rules" validation failed: wrong type: expected array, got table)"},
      {R"({"rules":[1]})",
       R"(property "rules" validation failed: failed to validate item 1: wrong type: expected object, got number)"},
      {R"({"rules":[{"x":1}]})",
       R"(property "rules" validation failed: failed to validate item 1: additional properties forbidden, found x)"},
      {R"({"rules":[{"weighted_upstreams":[]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: expect array to have at least 1 items)"},
      {R"({"rules":[{"weighted_upstreams":[{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: expect array to have at most 20 items)"},
      {R"({"rules":[{"weighted_upstreams":[{"weight":-1}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "weight" validation failed: expected -1 to be at least 0)"},
      {R"({"rules":[{"weighted_upstreams":[{"weight":"1"}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "weight" validation failed: wrong type: expected integer, got string)"},
      {R"({"rules":[{"weighted_upstreams":[{"upstream_id":"a b"}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "upstream_id" validation failed: object matches none of the required)"},
      {R"({"rules":[{"weighted_upstreams":[{"upstream":"u1"}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "weighted_upstreams" validation failed: failed to validate item 1: property "upstream" validation failed: wrong type: expected object, got string)"},
      {R"({"rules":[{"match":{}}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "match" validation failed: wrong type: expected array, got table)"},
      {R"({"rules":[{"match":[{"vars":{}}]}]})",
       R"(property "rules" validation failed: failed to validate item 1: property "match" validation failed: failed to validate item 1: property "vars" validation failed: wrong type: expected array, got table)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(check(Json::parse(c.conf), plugin::PluginUse::kHttp).message(), c.error) << c.conf;
  }
  // After the schema, APISIX compiles each match's vars (check_schema's own text).
  std::string bad = check(Json::parse(R"({"rules":[{"match":[{"vars":[["arg_x","<>","1"]]}]}]})"),
                          plugin::PluginUse::kHttp)
                        .message();
  EXPECT_TRUE(bad.starts_with("failed to validate the 'vars' expression: ")) << bad;
}

std::vector<int> picks(const Schedule& s, int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(s.next());
  }
  return out;
}

TEST(TrafficSplitSchedule, SmoothWeightedRoundRobin) {
  // nginx's smooth sequence for 5:1:1.
  Schedule s({5, 1, 1});
  EXPECT_EQ(picks(s, 14), (std::vector<int>{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}));
  // The docs' canary: 3:2, 60% and 40% of every 5.
  Schedule canary({3, 2});
  EXPECT_EQ(picks(canary, 5), (std::vector<int>{0, 1, 0, 1, 0}));
}

TEST(TrafficSplitSchedule, SharesAreExactPerCycleAndZeroNeverPicks) {
  Schedule s({30, 0, 10, 60});  // gcd 10: a cycle of 10
  std::map<int, int> n;
  for (int i = 0; i < 1000; ++i) {
    ++n[s.next()];
  }
  EXPECT_EQ(n[0], 300);
  EXPECT_EQ(n[1], 0);
  EXPECT_EQ(n[2], 100);
  EXPECT_EQ(n[3], 600);
}

TEST(TrafficSplitSchedule, LongCyclesKeepTheirShares) {
  // 1,000,003 + 2,000,006 is far past what is spelled out; the shares hold per cycle.
  Schedule s({1000003, 2000006, 1});
  std::map<int, uint64_t> n;
  const uint64_t total = 1000003 + 2000006 + 1;
  for (uint64_t i = 0; i < total; ++i) {
    ++n[s.next()];
  }
  EXPECT_EQ(n[0], 1000003u);
  EXPECT_EQ(n[1], 2000006u);
  EXPECT_EQ(n[2], 1u);
}

TEST(TrafficSplitSchedule, AllZeroPicksNothing) {
  Schedule s({0, 0});
  EXPECT_EQ(s.next(), -1);
}

// A stand-in for one of the snapshot's upstreams: only its address is compared.
const upstream::Upstream* fake_upstream(int i) {
  static const char storage[4] = {};
  return reinterpret_cast<const upstream::Upstream*>(&storage[i]);
}

TrafficSplit::CompiledRule rule(std::vector<const char*> matches, int upstream) {
  TrafficSplit::CompiledRule r;
  r.has_match = !matches.empty();
  for (const char* m : matches) {
    r.match.push_back(std::move(router::Expr::compile(Json::parse(m))).value());
  }
  TrafficSplit::Choice c;
  c.kind = TrafficSplit::Choice::Kind::kUpstream;
  c.upstream = fake_upstream(upstream);
  r.choices.push_back(c);
  r.schedule = std::make_unique<Schedule>(std::vector<int64_t>{1});
  return r;
}

const upstream::Upstream* chosen(const TrafficSplit& ts, FakeRequest& req) {
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  EXPECT_EQ(ts.access(ctx), plugin::Action::kContinue);
  return ctx.upstream_override;
}

TEST(TrafficSplitMatch, FirstPassingRuleWinsAndAnyMatchOfARulePasses) {
  std::vector<TrafficSplit::CompiledRule> rules;
  rules.push_back(rule({R"([["http_release","==","new_release"]])",
                        R"([["arg_name","==","jack"],["http_user-id",">","23"]])"},
                       1));
  rules.push_back(rule({R"([["arg_x","==","1"]])"}, 2));
  TrafficSplit ts(std::move(rules));

  FakeRequest blue("GET", "/headers", "", {{"release", "new_release"}});
  EXPECT_EQ(chosen(ts, blue), fake_upstream(1));
  FakeRequest second_match("GET", "/?name=jack", "", {{"user-id", "30"}});
  EXPECT_EQ(chosen(ts, second_match), fake_upstream(1));
  FakeRequest and_fails("GET", "/?name=jack", "", {{"user-id", "3"}});
  EXPECT_EQ(chosen(ts, and_fails), nullptr);
  FakeRequest rule2("GET", "/?x=1");
  EXPECT_EQ(chosen(ts, rule2), fake_upstream(2));
  FakeRequest none("GET", "/");
  EXPECT_EQ(chosen(ts, none), nullptr);  // the route's own upstream
}

TEST(TrafficSplitMatch, ARuleWithoutMatchTakesEveryRequest) {
  std::vector<TrafficSplit::CompiledRule> rules;
  rules.push_back(rule({R"([["arg_x","==","1"]])"}, 1));
  rules.push_back(rule({}, 3));
  TrafficSplit ts(std::move(rules));
  FakeRequest x("GET", "/?x=1");
  EXPECT_EQ(chosen(ts, x), fake_upstream(1));
  FakeRequest other("GET", "/");
  EXPECT_EQ(chosen(ts, other), fake_upstream(3));
}

TEST(TrafficSplitMatch, AnEmptyMatchListCarriesThePreviousVerdictAsInAPISIX) {
  // APISIX's match_passed starts true and carries from one rule to the next.
  std::vector<TrafficSplit::CompiledRule> first;
  first.push_back(rule({}, 1));
  first.back().has_match = true;  // "match": []
  TrafficSplit taken(std::move(first));
  FakeRequest r("GET", "/");
  EXPECT_EQ(chosen(taken, r), fake_upstream(1));

  std::vector<TrafficSplit::CompiledRule> after_miss;
  after_miss.push_back(rule({R"([["arg_x","==","1"]])"}, 1));
  after_miss.push_back(rule({}, 2));
  after_miss.back().has_match = true;
  TrafficSplit skipped(std::move(after_miss));
  EXPECT_EQ(chosen(skipped, r), nullptr);
}

TEST(TrafficSplitMatch, AMissingUpstreamIdAsksFor502) {
  std::vector<TrafficSplit::CompiledRule> rules;
  rules.push_back(rule({}, 1));
  rules.back().choices[0].kind = TrafficSplit::Choice::Kind::kMissing;
  rules.back().choices[0].upstream = nullptr;
  rules.back().choices[0].upstream_id = "nope";
  TrafficSplit ts(std::move(rules));
  FakeRequest r("GET", "/");
  plugin::Context ctx;
  ctx.req = &r.head;
  ctx.match = r.ctx;
  EXPECT_EQ(ts.access(ctx), plugin::Action::kContinue);
  EXPECT_TRUE(ctx.upstream_missing);
  EXPECT_EQ(ctx.upstream_override, nullptr);
}

}  // namespace
}  // namespace sluice::plugins::traffic_split
