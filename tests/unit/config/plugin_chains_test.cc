// From `plugins` objects to the chains a snapshot serves: merge precedence, `_meta`, plugins
// that are not enabled, global rules, and the snapshot builder's use of them.

#include "config/plugin_chains.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/plugin_registry.h"
#include "config/snapshot_builder.h"
#include "config/standalone.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/prometheus/prometheus.h"
#include "unit/router/fake_request.h"

namespace sluice::config {
namespace plugin_chains_test {

using ::testing::ElementsAre;
using ChainPtr = std::shared_ptr<const plugin::Chain>;

// Restores the default enabled set however the test ends (the set is process-wide).
class EnabledPlugins {
 public:
  explicit EnabledPlugins(const std::vector<std::string>& names) { set_enabled_plugins(&names); }
  ~EnabledPlugins() { set_enabled_plugins(nullptr); }
};

struct Built {
  ChainPtr chain;
  std::vector<std::string> warnings;
};

Built build_ok(const char* plugins, std::string_view owner = "route/1") {
  plugin::Shared shared;
  Built b;
  auto c = build_chain(Json::parse(plugins), owner, shared, &b.warnings);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  if (c.is_ok()) {
    b.chain = *c;
  }
  return b;
}

std::string build_error(const char* plugins) {
  plugin::Shared shared;
  std::vector<std::string> warnings;
  auto c = build_chain(Json::parse(plugins), "route/1", shared, &warnings);
  EXPECT_FALSE(c.is_ok());
  return c.is_ok() ? "" : c.status().message();
}

std::vector<std::string> names(const plugin::Chain& c) {
  std::vector<std::string> out;
  for (const auto& e : c.entries()) {
    out.push_back(e.name);
  }
  return out;
}

const plugin::Entry* entry(const plugin::Chain& c, std::string_view name) {
  for (const auto& e : c.entries()) {
    if (e.name == name) {
      return &e;
    }
  }
  return nullptr;
}

uint64_t count_of(const plugin::Entry* e) {
  auto* lc = e == nullptr ? nullptr
                          : dynamic_cast<const plugins::limit_count::LimitCount*>(e->plugin.get());
  return lc == nullptr ? 0 : lc->conf().count;
}

TEST(MergePlugins, LaterSourcesWinPerPluginName) {
  const Json service = Json::parse(R"({"a": {"from": "service"}, "b": {"from": "service"}})");
  const Json config = Json::parse(R"({"b": {"from": "config"}, "c": {"from": "config"}})");
  const Json route = Json::parse(R"({"c": {"from": "route"}, "d": {"from": "route"}})");
  EXPECT_EQ(merge_plugins({&service, &config, &route}), Json::parse(R"({
      "a": {"from": "service"}, "b": {"from": "config"}, "c": {"from": "route"},
      "d": {"from": "route"}})"));
  // A conf is replaced whole, never merged key by key.
  const Json wide = Json::parse(R"({"a": {"x": 1, "y": 1}})");
  const Json narrow = Json::parse(R"({"a": {"x": 2}})");
  EXPECT_EQ(merge_plugins({&wide, &narrow}), Json::parse(R"({"a": {"x": 2}})"));
  // Null sources and non-objects are skipped.
  const Json null_json;
  EXPECT_EQ(merge_plugins({nullptr, &null_json, &route, nullptr}), route);
  EXPECT_EQ(merge_plugins({}), Json::object());
}

TEST(BuildChain, BuildsEachPluginSortedByPriority) {
  Built b = build_ok(R"({"prometheus": {}, "limit-count": {"count": 2, "time_window": 60}})");
  ASSERT_NE(b.chain, nullptr);
  EXPECT_TRUE(b.warnings.empty());
  EXPECT_EQ(names(*b.chain), (std::vector<std::string>{"limit-count", "prometheus"}));
  EXPECT_EQ(b.chain->entries()[0].priority, 1002);
  EXPECT_EQ(b.chain->entries()[1].priority, 500);
  EXPECT_EQ(count_of(&b.chain->entries()[0]), 2u);
  EXPECT_NE(
      dynamic_cast<const plugins::prometheus::Prometheus*>(b.chain->entries()[1].plugin.get()),
      nullptr);
  EXPECT_TRUE(b.chain->has(plugin::Phase::kAccess));
  EXPECT_TRUE(b.chain->has(plugin::Phase::kLog));
  EXPECT_FALSE(b.chain->has(plugin::Phase::kRewrite));
  EXPECT_FALSE(b.chain->has(plugin::Phase::kHeaderFilter));
  EXPECT_FALSE(b.chain->entries()[0].has_filter);
  EXPECT_FALSE(b.chain->entries()[0].has_error_response);
}

TEST(BuildChain, NoPluginsNoChain) {
  for (const char* plugins : {"null", "{}", R"({"prometheus": {"_meta": {"disable": true}}})"}) {
    SCOPED_TRACE(plugins);
    Built b = build_ok(plugins);
    EXPECT_EQ(b.chain, nullptr);
    EXPECT_TRUE(b.warnings.empty());
  }
}

TEST(BuildChain, AppliesMeta) {
  Built b = build_ok(R"({
      "limit-count": {"count": 2, "time_window": 60,
                      "_meta": {"error_response": {"message": "too many", "code": 1}}},
      "prometheus": {"_meta": {"priority": 2000, "error_response": "plain text",
                               "filter": [["arg_a", "==", "1"]]}}})");
  ASSERT_NE(b.chain, nullptr);
  // `_meta.priority` overrides the default and moves prometheus first.
  EXPECT_EQ(names(*b.chain), (std::vector<std::string>{"prometheus", "limit-count"}));
  const plugin::Entry* prom = entry(*b.chain, "prometheus");
  ASSERT_NE(prom, nullptr);
  EXPECT_EQ(prom->priority, 2000);
  EXPECT_TRUE(prom->has_error_response);
  EXPECT_EQ(prom->error_response, "plain text");
  EXPECT_TRUE(prom->has_filter);
  const plugin::Entry* lc = entry(*b.chain, "limit-count");
  ASSERT_NE(lc, nullptr);
  EXPECT_EQ(lc->priority, 1002);
  EXPECT_TRUE(lc->has_error_response);
  EXPECT_EQ(lc->error_response, "{\"code\":1,\"message\":\"too many\"}\n");
  EXPECT_FALSE(lc->has_filter);
  // The plugin was built from its conf without `_meta`.
  EXPECT_EQ(count_of(lc), 2u);

  // The compiled filter is the one given: it says no to entry 0 (prometheus) for ?a=2 only.
  router::testing::FakeRequest yes("GET", "/x?a=1"), no("GET", "/x?a=2");
  EXPECT_EQ(b.chain->filter_mask(yes.ctx), 0u);
  EXPECT_EQ(b.chain->filter_mask(no.ctx), 1u);
}

TEST(BuildChain, DisabledPluginsAreLeftOut) {
  Built b = build_ok(R"({
      "limit-count": {"count": 2, "time_window": 60, "_meta": {"disable": true}},
      "prometheus": {"_meta": {"disable": false}}})");
  ASSERT_NE(b.chain, nullptr);
  EXPECT_EQ(names(*b.chain), std::vector<std::string>{"prometheus"});
  EXPECT_FALSE(b.chain->has(plugin::Phase::kAccess));
  EXPECT_TRUE(b.warnings.empty());
}

TEST(BuildChain, PluginsNotEnabledAreSkippedWithAWarning) {
  EnabledPlugins only({"prometheus"});
  Built b = build_ok(R"({"limit-count": {"count": 2, "time_window": 60}, "prometheus": {},
                         "key-auth": {"key": "k"}})",
                     "route/7");
  ASSERT_NE(b.chain, nullptr);
  EXPECT_EQ(names(*b.chain), std::vector<std::string>{"prometheus"});
  EXPECT_THAT(b.warnings, ElementsAre("route/7: plugin key-auth is not enabled; it is skipped",
                                      "route/7: plugin limit-count is not enabled; it is skipped"));
  Built none = build_ok(R"({"limit-count": {"count": 2, "time_window": 60}})", "global_rule/1");
  EXPECT_EQ(none.chain, nullptr);
  EXPECT_THAT(none.warnings,
              ElementsAre("global_rule/1: plugin limit-count is not enabled; it is skipped"));
}

TEST(BuildChain, ErrorsNameThePlugin) {
  // Confs reach the builder checked; these show what it says if one is not.
  EXPECT_EQ(build_error(R"({"limit-count": {"count": 0, "time_window": 60}})"),
            "plugin limit-count: property \"count\" validation failed: expected 0 to be greater "
            "than 0");
  EXPECT_THAT(
      build_error(R"({"prometheus": {"_meta": {"filter": [["arg_a", "~~", "("]]}}})"),
      ::testing::StartsWith("plugin prometheus: failed to validate the 'vars' expression: "));
}

TEST(BuildGlobalChain, MergesEveryRule) {
  plugin::Shared shared;
  std::vector<std::string> warnings;
  std::vector<GlobalRuleConf> rules(3);
  rules[0].id = "1";
  rules[0].plugins = Json::parse(R"({"limit-count": {"count": 9, "time_window": 60}})");
  rules[1].id = "2";
  rules[1].plugins = Json::parse(R"({})");
  rules[2].id = "3";
  rules[2].plugins = Json::parse(R"({"prometheus": {}, "limit-count": {"count": 3,
                                     "time_window": 1}})");
  auto c = build_global_chain(rules, shared, &warnings);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  ASSERT_NE(*c, nullptr);
  // Both rules' limit-count run: each rule's plugins are its own.
  EXPECT_EQ(names(**c), (std::vector<std::string>{"limit-count", "limit-count", "prometheus"}));
  std::vector<uint64_t> counts = {count_of(&(*c)->entries()[0]), count_of(&(*c)->entries()[1])};
  std::sort(counts.begin(), counts.end());
  EXPECT_EQ(counts, (std::vector<uint64_t>{3, 9}));
  EXPECT_TRUE(warnings.empty());
}

// prometheus is prefer_route: in two global rules it would count each request twice, so only
// the first rule's is kept, with a warning naming the second.
TEST(BuildGlobalChain, APreferRoutePluginInTwoRulesIsKeptOnce) {
  plugin::Shared shared;
  std::vector<std::string> warnings;
  std::vector<GlobalRuleConf> rules(2);
  rules[0].id = "1";
  rules[0].plugins = Json::parse(R"({"prometheus": {}})");
  rules[1].id = "2";
  rules[1].plugins = Json::parse(R"({"prometheus": {"prefer_name": true},
                                     "limit-count": {"count": 3, "time_window": 1}})");
  auto c = build_global_chain(rules, shared, &warnings);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  ASSERT_NE(*c, nullptr);
  EXPECT_EQ(names(**c), (std::vector<std::string>{"limit-count", "prometheus"}));
  EXPECT_TRUE((*c)->entries()[1].prefer_route);
  EXPECT_THAT(warnings, ElementsAre("global_rule/2: plugin prometheus is in an earlier global "
                                    "rule too; only the first runs"));
}

TEST(BuildGlobalChain, NoPluginsNoChain) {
  plugin::Shared shared;
  std::vector<std::string> warnings;
  std::vector<GlobalRuleConf> rules(2);
  rules[0].id = "1";
  rules[0].plugins = Json::object();
  rules[1].id = "2";
  rules[1].plugins = Json::parse(R"({"prometheus": {"_meta": {"disable": true}}})");
  for (size_t n : {0, 2}) {
    std::vector<GlobalRuleConf> first_n(rules.begin(), rules.begin() + n);
    auto c = build_global_chain(first_n, shared, &warnings);
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    EXPECT_EQ(*c, nullptr);
  }
}

TEST(BuildGlobalChain, ErrorsNameTheRule) {
  plugin::Shared shared;
  std::vector<std::string> warnings;
  std::vector<GlobalRuleConf> rules(2);
  rules[0].id = "1";
  rules[0].plugins = Json::parse(R"({"prometheus": {}})");
  rules[1].id = "g2";
  rules[1].plugins = Json::parse(R"({"limit-count": {"count": 1}})");
  auto c = build_global_chain(rules, shared, &warnings);
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().message(),
            "global_rule g2: plugin limit-count: property \"time_window\" is required");
}

BuildResult build_snapshot_ok(const std::string& yaml) {
  auto set = parse_standalone(yaml + "\n#END\n");
  EXPECT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto built = set.is_ok() ? build_snapshot(*set, dns, 1, &shared)
                           : common::StatusOr<BuildResult>(set.status());
  EXPECT_TRUE(built.is_ok()) << built.status().message();
  return built.is_ok() ? std::move(built).value() : BuildResult{};
}

const snapshot::Route* route_by_id(const snapshot::Snapshot& s, std::string_view id) {
  for (const auto& r : s.routes) {
    if (r.id == id) {
      return &r;
    }
  }
  return nullptr;
}

TEST(SnapshotChains, RoutesGetTheirMergedChain) {
  BuildResult b = build_snapshot_ok(R"(
services:
  - id: s1
    name: svc-one
    plugins:
      prometheus: {}
      limit-count: {count: 100, time_window: 60}
plugin_configs:
  - id: pc1
    plugins:
      limit-count: {count: 50, time_window: 60}
routes:
  - id: all
    name: route-all
    uri: /all
    service_id: s1
    plugin_config_id: pc1
    plugins:
      limit-count: {count: 2, time_window: 60}
  - id: config-over-service
    uri: /pc
    service_id: s1
    plugin_config_id: pc1
  - id: service-only
    uri: /svc
    service_id: s1
  - id: bare
    uri: /bare
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: empty
    uri: /empty
    plugins: {}
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: lost-config
    uri: /lost
    plugin_config_id: nope
    upstream: {nodes: {"127.0.0.1:80": 1}}
)");
  ASSERT_NE(b.snapshot, nullptr);
  const snapshot::Snapshot& s = *b.snapshot;
  EXPECT_EQ(s.global, nullptr);

  const snapshot::Route* all = route_by_id(s, "all");
  ASSERT_NE(all, nullptr);
  ASSERT_NE(all->chain, nullptr);
  EXPECT_EQ(names(*all->chain), (std::vector<std::string>{"limit-count", "prometheus"}));
  EXPECT_EQ(count_of(entry(*all->chain, "limit-count")), 2u);
  EXPECT_EQ(all->name, "route-all");
  EXPECT_EQ(all->service_name, "svc-one");

  const snapshot::Route* pc = route_by_id(s, "config-over-service");
  ASSERT_NE(pc, nullptr);
  ASSERT_NE(pc->chain, nullptr);
  EXPECT_EQ(count_of(entry(*pc->chain, "limit-count")), 50u);
  EXPECT_NE(entry(*pc->chain, "prometheus"), nullptr);

  const snapshot::Route* svc = route_by_id(s, "service-only");
  ASSERT_NE(svc, nullptr);
  ASSERT_NE(svc->chain, nullptr);
  EXPECT_EQ(count_of(entry(*svc->chain, "limit-count")), 100u);

  for (const char* id : {"bare", "empty", "lost-config"}) {
    SCOPED_TRACE(id);
    const snapshot::Route* r = route_by_id(s, id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->chain, nullptr);
  }
  EXPECT_THAT(b.warnings,
              ::testing::Contains(
                  "route lost-config: plugin_config nope not found; the route answers 503"));
}

TEST(SnapshotChains, GlobalIsSetOnlyWhenGlobalRulesHavePlugins) {
  const char* kRoute = R"(
routes:
  - id: 1
    uri: /a
    upstream: {nodes: {"127.0.0.1:80": 1}}
)";
  EXPECT_EQ(build_snapshot_ok(kRoute).snapshot->global, nullptr);
  EXPECT_EQ(build_snapshot_ok(std::string(kRoute) + R"(
global_rules:
  - id: 1
    plugins: {}
)")
                .snapshot->global,
            nullptr);
  BuildResult b = build_snapshot_ok(std::string(kRoute) + R"(
global_rules:
  - id: 1
    plugins:
      prometheus: {}
  - id: 2
    plugins:
      limit-count: {count: 10, time_window: 1}
)");
  ASSERT_NE(b.snapshot->global, nullptr);
  EXPECT_EQ(names(*b.snapshot->global), (std::vector<std::string>{"limit-count", "prometheus"}));
  // The route's own chain does not repeat the global plugins.
  EXPECT_EQ(b.snapshot->routes.at(0).chain, nullptr);
}

TEST(SnapshotChains, APluginDisabledAfterTheCheckIsSkipped) {
  // A set checked while limit-count was enabled, built after it was disabled (config.yaml
  // `plugins` changed and reloaded): the plugin is skipped with a warning, not an error.
  auto set = parse_standalone(R"(
routes:
  - id: 1
    uri: /a
    plugins:
      limit-count: {count: 1, time_window: 1}
    upstream: {nodes: {"127.0.0.1:80": 1}}
#END
)");
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  EnabledPlugins only({"prometheus"});
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto built = build_snapshot(*set, dns, 1, &shared);
  ASSERT_TRUE(built.is_ok()) << built.status().message();
  EXPECT_EQ(built->snapshot->routes.at(0).chain, nullptr);
  EXPECT_THAT(built->warnings,
              ::testing::Contains("route/1: plugin limit-count is not enabled; it is skipped"));
}

}  // namespace plugin_chains_test
}  // namespace sluice::config

namespace sluice::config {
namespace plugin_chains_test {

const plugin::Chain* chain_of(const BuildResult& b, std::string_view id) {
  const snapshot::Route* r = route_by_id(*b.snapshot, id);
  return r != nullptr ? r->chain.get() : nullptr;
}

// An unchanged route keeps its chain object from one build to the next (so a change to one
// route of many builds one chain); a changed conf, or forgetting the cache, builds a new one.
TEST(SnapshotChains, UnchangedRoutesReuseTheirChain) {
  auto set = parse_standalone(R"(
routes:
  - id: a
    uri: /a
    plugins: {limit-count: {count: 2, time_window: 60}}
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: b
    uri: /b
    plugins: {prometheus: {}}
    upstream: {nodes: {"127.0.0.1:80": 1}}
#END
)");
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto first = build_snapshot(*set, dns, 1, &shared);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  auto again = build_snapshot(*set, dns, 2, &shared);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(chain_of(*first, "a"), chain_of(*again, "a"));
  EXPECT_EQ(chain_of(*first, "b"), chain_of(*again, "b"));

  set->routes[0].plugins["limit-count"]["count"] = 3;
  auto changed = build_snapshot(*set, dns, 3, &shared);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_NE(chain_of(*again, "a"), chain_of(*changed, "a"));
  EXPECT_EQ(chain_of(*again, "b"), chain_of(*changed, "b"));

  shared.forget(kChainCacheKey);
  auto fresh = build_snapshot(*set, dns, 4, &shared);
  ASSERT_TRUE(fresh.is_ok());
  EXPECT_NE(chain_of(*changed, "b"), chain_of(*fresh, "b"));
}

TEST(SnapshotChains, AChainThatReadPluginMetadataIsBuiltAgainWhenItChanges) {
  auto set = parse_standalone(R"(
routes:
  - id: meta
    uri: /m
    plugins: {cors: {allow_origins_by_metadata: [k]}}
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: plain
    uri: /p
    plugins: {cors: {}}
    upstream: {nodes: {"127.0.0.1:80": 1}}
plugin_metadata:
  - id: cors
    allow_origins: {k: "https://a.com"}
#END
)");
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  auto first = build_snapshot(*set, dns, 1, &shared);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  EXPECT_EQ(shared.metadata, nullptr);  // lent only while building
  auto same = build_snapshot(*set, dns, 2, &shared);
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(chain_of(*first, "meta"), chain_of(*same, "meta"));

  set->plugin_metadata[0].value["allow_origins"]["k"] = "https://b.com";
  auto changed = build_snapshot(*set, dns, 3, &shared);
  ASSERT_TRUE(changed.is_ok());
  EXPECT_NE(chain_of(*same, "meta"), chain_of(*changed, "meta"));
  EXPECT_EQ(chain_of(*same, "plain"), chain_of(*changed, "plain"));  // it never read it

  set->plugin_metadata.clear();
  auto removed = build_snapshot(*set, dns, 4, &shared);
  ASSERT_TRUE(removed.is_ok());
  EXPECT_NE(chain_of(*changed, "meta"), chain_of(*removed, "meta"));
  auto still_removed = build_snapshot(*set, dns, 5, &shared);
  ASSERT_TRUE(still_removed.is_ok());
  EXPECT_EQ(chain_of(*removed, "meta"), chain_of(*still_removed, "meta"));
}

}  // namespace plugin_chains_test
}  // namespace sluice::config
