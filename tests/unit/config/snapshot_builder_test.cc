#include "config/snapshot_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/standalone.h"
#include "http/message.h"

namespace sluice::config {
namespace snapshot_builder_test {

BuildResult build_ok(const std::string& yaml) {
  auto set = parse_standalone(yaml + "\n#END\n");
  EXPECT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  auto built = build_snapshot(*set, dns, 7);
  EXPECT_TRUE(built.is_ok()) << built.status().message();
  return std::move(built).value();
}

std::string build_error(const std::string& yaml) {
  auto set = parse_standalone(yaml + "\n#END\n");
  EXPECT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  auto built = build_snapshot(*set, dns, 1);
  EXPECT_FALSE(built.is_ok());
  return built.is_ok() ? "" : built.status().message();
}

const snapshot::Route* match(const snapshot::Snapshot& s, std::string_view path,
                             std::string_view host = "example.com") {
  http::RequestHead req;
  req.method = http::Method::kGet;
  req.path = req.uri = path;
  req.host = host;
  router::MatchContext ctx{&req, "127.0.0.1", {}, 9080};
  router::parse_ip("127.0.0.1", &ctx.remote_ip);
  const router::RouteSpec* spec = s.table.match(ctx);
  return spec == nullptr ? nullptr : &s.routes[spec->index];
}

// The one list of what is served: the standalone file's "not served" warning reads it.
TEST(SnapshotBuilderTest, ConfigKindsSayWhatIsServed) {
  std::vector<std::string> served, kept;
  for (const ConfigKind& k : config_kinds()) {
    (k.served ? served : kept).emplace_back(k.name);
  }
  EXPECT_THAT(served, ::testing::ElementsAre("ssls", "plugin_metadata", "upstreams", "services",
                                             "plugin_configs", "global_rules", "routes",
                                             "consumer_groups", "consumers"));
  EXPECT_THAT(kept, ::testing::ElementsAre("stream_routes", "protos", "secrets"));
  ConfigSet set;
  set.global_rules.emplace_back();
  set.global_rules.emplace_back();
  set.secrets.emplace_back();
  for (const ConfigKind& k : config_kinds()) {
    SCOPED_TRACE(k.name);
    EXPECT_EQ(k.count(set), k.name == "global_rules" ? 2u : k.name == "secrets" ? 1u : 0u);
  }
}

// A served kind is one the built snapshot reflects: a global rule gives a global chain.
TEST(SnapshotBuilderTest, GlobalRulesAreServed) {
  BuildResult b = build_ok(R"(
global_rules:
  - plugins:
      proxy-rewrite: {uri: /x}
)");
  EXPECT_NE(b.snapshot->global, nullptr);
}

TEST(SnapshotBuilderTest, LinksInlineReferencedAndServiceUpstreams) {
  BuildResult r = build_ok(R"(
upstreams:
  - id: u1
    nodes: {"127.0.0.1:81": 1, "127.0.0.1:82": 3}
    timeout: {connect: 1, send: 2, read: 3.5}
    keepalive_pool: {size: 7, idle_timeout: 4, requests: 9}
services:
  - id: s1
    upstream_id: u1
    hosts: [svc.example]
routes:
  - id: inline
    uri: /inline
    upstream: {nodes: {"127.0.0.1:80": 1}, pass_host: node}
  - id: by-id
    uri: /by-id
    upstream_id: u1
  - id: via-service
    uri: /svc
    service_id: s1
  - id: dangling
    uri: /dangling
    upstream_id: nope
  - id: no-service
    uri: /gone
    service_id: nope
  - id: off
    uri: /off
    status: 0
    upstream_id: u1
)");
  const auto& s = *r.snapshot;
  EXPECT_EQ(s.version, 7u);
  EXPECT_EQ(s.routes.size(), 5u);  // status 0 is left out

  const snapshot::Route* inl = match(s, "/inline");
  ASSERT_NE(inl, nullptr);
  ASSERT_EQ(inl->target, snapshot::RouteTarget::kUpstream);
  EXPECT_EQ(inl->upstream->nodes[0].host_header, "127.0.0.1");
  EXPECT_EQ(inl->upstream->pass_host, upstream::PassHost::kNode);
  EXPECT_EQ(inl->upstream->retries, 0);
  EXPECT_EQ(inl->timeouts.read_ms, 60000u);

  const snapshot::Route* by_id = match(s, "/by-id");
  ASSERT_NE(by_id, nullptr);
  EXPECT_EQ(by_id->upstream->id, "u1");
  EXPECT_EQ(by_id->upstream->retries, 1);  // nodes - 1
  EXPECT_EQ(by_id->timeouts.read_ms, 3500u);
  EXPECT_EQ(by_id->upstream->pool_size, 7u);
  EXPECT_EQ(by_id->upstream->pool_idle_ms, 4000u);
  EXPECT_EQ(by_id->upstream->pool_requests, 9u);
  EXPECT_EQ(by_id->upstream->nodes[1].addr_key, "127.0.0.1:82");

  // The service supplies both the upstream and the hosts.
  EXPECT_EQ(match(s, "/svc"), nullptr);
  const snapshot::Route* svc = match(s, "/svc", "svc.example");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ(svc->upstream->id, "u1");

  EXPECT_EQ(match(s, "/dangling")->target, snapshot::RouteTarget::kUpstreamMissing);
  EXPECT_EQ(match(s, "/gone")->target, snapshot::RouteTarget::kServiceMissing);
  EXPECT_EQ(match(s, "/off"), nullptr);
  EXPECT_EQ(r.warnings.size(), 2u);
}

TEST(SnapshotBuilderTest, RouteTimeoutOverridesUpstreamTimeout) {
  BuildResult r = build_ok(R"(
routes:
  - id: 1
    uri: /t
    timeout: {connect: 0.5, send: 0.25, read: 0.75}
    upstream: {nodes: {"127.0.0.1:80": 1}, timeout: {connect: 9, send: 9, read: 9}}
)");
  const snapshot::Route* t = match(*r.snapshot, "/t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->timeouts.connect_ms, 500u);
  EXPECT_EQ(t->timeouts.send_ms, 250u);
  EXPECT_EQ(t->timeouts.read_ms, 750u);
}

// apisix/init.lua: the route's enable_websocket, or its service's when the route's is nil.
TEST(SnapshotBuilderTest, EnableWebsocketIsTheRoutesOrElseItsServices) {
  BuildResult r = build_ok(R"(
services:
  - id: on
    enable_websocket: true
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: off
    upstream: {nodes: {"127.0.0.1:80": 1}}
routes:
  - {id: 1, uri: /inherits, service_id: on}
  - {id: 2, uri: /refuses, service_id: on, enable_websocket: false}
  - {id: 3, uri: /own, service_id: off, enable_websocket: true}
  - {id: 4, uri: /none, service_id: off}
  - {id: 5, uri: /alone, enable_websocket: true, upstream: {nodes: {"127.0.0.1:80": 1}}}
)");
  const snapshot::Snapshot& s = *r.snapshot;
  EXPECT_TRUE(match(s, "/inherits")->websocket);
  EXPECT_FALSE(match(s, "/refuses")->websocket);
  EXPECT_TRUE(match(s, "/own")->websocket);
  EXPECT_FALSE(match(s, "/none")->websocket);
  EXPECT_TRUE(match(s, "/alone")->websocket);
}

TEST(SnapshotBuilderTest, HostNamesResolveAndHostHeaderKeepsPort) {
  BuildResult r = build_ok(R"(
routes:
  - id: 1
    uri: /h
    upstream: {nodes: {"localhost:8080": 1}}
)");
  const upstream::Node& n = match(*r.snapshot, "/h")->upstream->nodes[0];
  EXPECT_TRUE(n.resolved);
  EXPECT_TRUE(n.ip == "127.0.0.1" || n.ip == "::1") << n.ip;
  EXPECT_EQ(n.host_header, "localhost:8080");
}

TEST(SnapshotBuilderTest, OlderRouteWinsTiesByCreateTime) {
  BuildResult r = build_ok(R"(
routes:
  - id: newer
    uri: /same
    create_time: 200
    upstream: {nodes: {"127.0.0.1:80": 1}}
  - id: older
    uri: /same
    create_time: 100
    upstream: {nodes: {"127.0.0.1:80": 1}}
)");
  EXPECT_EQ(match(*r.snapshot, "/same")->id, "older");
}

TEST(SnapshotBuilderTest, BadVarsOrCidrRejectTheWholeSet) {
  EXPECT_NE(build_error(R"(
routes:
  - id: 1
    uri: /v
    vars: [["arg_x", "no-such-op", "1"]]
    upstream: {nodes: {"127.0.0.1:80": 1}}
)")
                .find("route 1:"),
            std::string::npos);
  EXPECT_NE(build_error(R"(
routes:
  - id: 2
    uri: /c
    remote_addrs: ["10.0.0.0/99"]
    upstream: {nodes: {"127.0.0.1:80": 1}}
)")
                .find("remote_addrs"),
            std::string::npos);
}

TEST(SnapshotBuilderTest, UpstreamBalancerFields) {
  BuildResult r = build_ok(R"(
upstreams:
  - id: rr
    nodes: {"127.0.0.1:81": 1}
  - id: ch
    type: chash
    hash_on: header
    key: X-User
    nodes: {"127.0.0.1:81": 1, "127.0.0.1:82": 2}
  - id: lc
    type: least_conn
    nodes: {"127.0.0.1:81": 1}
  - id: ew
    type: ewma
    nodes: {"127.0.0.1:81": 1}
)");
  const auto& ups = r.snapshot->upstreams;
  ASSERT_EQ(ups.size(), 4u);
  EXPECT_EQ(ups[0]->type, upstream::BalancerType::kRoundRobin);
  EXPECT_EQ(ups[0]->ring.size(), 0u);  // only chash upstreams get a ring
  EXPECT_EQ(ups[1]->type, upstream::BalancerType::kChash);
  EXPECT_EQ(ups[1]->hash_on, upstream::HashOn::kHeader);
  EXPECT_EQ(ups[1]->key, "X-User");
  EXPECT_EQ(ups[1]->ring.size(), 3 * upstream::ChashRing::kPointsPerWeight);
  http::RequestHead req;
  req.headers[req.num_headers++] = http::Header{"X-User", "alice"};
  router::MatchContext ctx{&req, "10.0.0.1", {}, 9080};
  EXPECT_EQ(ups[1]->hash_key.text(ctx, ""), "alice");
  EXPECT_EQ(ups[2]->type, upstream::BalancerType::kLeastConn);
  EXPECT_EQ(ups[3]->type, upstream::BalancerType::kEwma);
}

}  // namespace snapshot_builder_test
}  // namespace sluice::config

namespace sluice::config {
namespace snapshot_builder_test {

// Builds `yaml` with `health` keeping the upstreams' health across builds.
snapshot::SnapshotPtr build_with(const std::string& yaml, health::Registry& health) {
  auto set = parse_standalone(yaml + "\n#END\n");
  EXPECT_TRUE(set.is_ok()) << set.status().message();
  upstream::DnsCache dns(30);
  auto built = build_snapshot(*set, dns, 1, nullptr, &health);
  EXPECT_TRUE(built.is_ok()) << built.status().message();
  return built.is_ok() ? built->snapshot : nullptr;
}

const char* kChecked = R"(
upstreams:
  - id: u1
    nodes: {"127.0.0.1:1980": 1, "127.0.0.1:1981": 1}
    checks: {active: {type: tcp}}
routes:
  - id: r1
    uri: /a
    upstream_id: u1
  - id: r2
    uri: /b
    upstream:
      nodes: {"127.0.0.1:1982": 1, "127.0.0.1:1983": 0}
      checks: {active: {}, passive: {}}
  - id: r3
    uri: /c
    upstream:
      nodes: {"127.0.0.1:1984": 1}
      checks: {active: {}}
)";

TEST(SnapshotBuilderHealth, CheckedUpstreamsGetStateNamedByTheirKey) {
  health::Registry reg;
  auto snap = build_with(kChecked, reg);
  ASSERT_NE(snap, nullptr);
  const auto* a = match(*snap, "/a")->upstream;
  const auto* b = match(*snap, "/b")->upstream;
  const auto* c = match(*snap, "/c")->upstream;
  ASSERT_NE(a->health, nullptr);
  ASSERT_NE(b->health, nullptr);
  EXPECT_EQ(c->health, nullptr);  // one node: not checked, as in APISIX
  EXPECT_EQ(a->health->name(), "/apisix/upstreams/u1");
  EXPECT_EQ(b->health->name(), "/apisix/routes/r2");
  EXPECT_EQ(b->health->checks().active.type, health::ProbeType::kHttp);
  EXPECT_TRUE(b->health->checks().passive.has_value());
  EXPECT_FALSE(b->health->targets()[1].pickable);  // weight 0
  EXPECT_EQ(reg.live().size(), 2u);
}

TEST(SnapshotBuilderHealth, AnUnrelatedChangeKeepsHealthAChecksChangeResetsIt) {
  health::Registry reg;
  auto first = build_with(kChecked, reg);
  const auto* a = match(*first, "/a")->upstream;
  a->health->probe_failure(0, health::Failure::kTcp);
  a->health->probe_failure(0, health::Failure::kTcp);
  ASSERT_FALSE(a->health->healthy(0));
  ASSERT_EQ(a->unhealthy_mask(), 1u);

  std::string other_route = std::string(kChecked) + R"(
  - id: r4
    uri: /d
    upstream_id: u1
)";
  auto second = build_with(other_route, reg);
  const auto* a2 = match(*second, "/a")->upstream;
  EXPECT_NE(a2, a);                  // a new snapshot, a new Upstream object...
  EXPECT_EQ(a2->health, a->health);  // ...with the same health state
  EXPECT_EQ(a2->unhealthy_mask(), 1u);

  std::string changed = other_route;
  changed.replace(changed.find("type: tcp"), 9, "type: http");
  auto third = build_with(changed, reg);
  EXPECT_TRUE(match(*third, "/a")->upstream->health->healthy(0));
}

}  // namespace snapshot_builder_test
}  // namespace sluice::config
