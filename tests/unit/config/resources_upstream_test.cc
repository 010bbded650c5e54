#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/resources.h"
#include "config/upstream_nodes.h"

namespace sluice::config {
namespace resources_upstream_test {

using ::testing::StartsWith;

struct Case {
  const char* json;
  const char* error;  // expected message prefix after "invalid configuration: "; nullptr = valid
};

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_upstream(Json::parse(c.json));
    if (c.error == nullptr) {
      EXPECT_TRUE(r.is_ok()) << r.status().message();
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_THAT(r.status().message(),
                  StartsWith(std::string("invalid configuration: ") + c.error));
    }
  }
}

TEST(DecodeUpstream, Valid) {
  run_cases({
      {R"({"nodes": {}})", nullptr},
      {R"({"nodes": []})", nullptr},
      {R"({"type": "chash", "hash_on": "header", "key": "x-user", "nodes": {"a.com": 1}})",
       nullptr},
      {R"({"type": "chash", "hash_on": "consumer", "nodes": {"a.com": 1}})", nullptr},
      {R"({"type": "least_conn", "nodes": [{"host": "10.0.0.1", "port": 8080, "weight": 0,
           "priority": -1, "metadata": {"zone": "a"}}]})",
       nullptr},
      {R"({"id": "u1", "name": "u", "desc": "d", "labels": {"a": "b"}, "type": "ewma",
           "nodes": {"127.0.0.1:1980": 1}, "retries": 0, "retry_timeout": 0.5,
           "timeout": {"connect": 1, "send": 1, "read": 1},
           "keepalive_pool": {"size": 1, "idle_timeout": 0, "requests": 1},
           "pass_host": "rewrite", "upstream_host": "example.com", "scheme": "http",
           "checks": {"active": {"http_path": "/status"}, "passive": {}},
           "create_time": 1, "update_time": 2})",
       nullptr},
  });
}

TEST(DecodeUpstream, Errors) {
  run_cases({
      {R"({"type": "random", "nodes": {}})",
       R"(property "type" validation failed: matches none of the enum values)"},
      {R"({"nodes": "127.0.0.1:80"})",
       R"(property "nodes" validation failed: object matches none of the required (wrong type: expected object or array, got string)"},
      {R"({"nodes": {"127.0.0.1:80": "1"}})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate 127.0.0.1:80 (matching ".*"): wrong type: expected integer, got string)"},
      {R"({"nodes": {"127.0.0.1:0": 1}})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate 127.0.0.1:0 (matching ".*"): invalid node address)"},
      {R"({"nodes": {"127.0.0.1:http": 1}})",
       R"(property "nodes" validation failed: object matches none of the required ()"},
      {R"({"nodes": {"[::1]x": 1}})",
       R"(property "nodes" validation failed: object matches none of the required ()"},
      {R"({"nodes": {"": 1}})",
       R"(property "nodes" validation failed: object matches none of the required ()"},
      {R"({"nodes": [{"host": "10.0.0.1"}]})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate item 1: property "weight" is required)"},
      {R"({"nodes": [{"weight": 1}]})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate item 1: property "host" is required)"},
      {R"({"nodes": [{"host": "a", "weight": 1, "port": 70000}]})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate item 1: property "port" validation failed: expected 70000 to be at most 65535)"},
      {R"({"nodes": [{"host": "a", "weight": 1, "zone": 1}]})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate item 1: additional properties forbidden, found zone)"},
      {R"({"nodes": [{"host": "a", "weight": 1}, 5]})",
       R"(property "nodes" validation failed: object matches none of the required (failed to validate item 2: wrong type: expected object, got number)"},
      {R"({"nodes": {}, "retries": -1})",
       R"(property "retries" validation failed: expected -1 to be at least 0)"},
      {R"({"nodes": {}, "retry_timeout": -0.5})",
       R"(property "retry_timeout" validation failed: expected -0.5 to be at least 0)"},
      {R"({"nodes": {}, "timeout": {"connect": 1, "send": 1, "read": -1}})",
       R"(property "timeout" validation failed: property "read" validation failed: expected -1 to be greater than 0)"},
      {R"({"nodes": {}, "keepalive_pool": {"size": 0}})",
       R"(property "keepalive_pool" validation failed: property "size" validation failed: expected 0 to be at least 1)"},
      {R"({"nodes": {}, "keepalive_pool": {"idle_timeout": -1}})",
       R"(property "keepalive_pool" validation failed: property "idle_timeout" validation failed)"},
      {R"({"nodes": {}, "keepalive_pool": {"requests": 0}})",
       R"(property "keepalive_pool" validation failed: property "requests" validation failed)"},
      {R"({"nodes": {}, "pass_host": "host"})",
       R"(property "pass_host" validation failed: matches none of the enum values)"},
      {R"({"nodes": {}, "scheme": "tcp"})",
       R"(property "scheme" validation failed: matches none of the enum values)"},
      {R"({"nodes": {}, "hash_on": "ip"})",
       R"(property "hash_on" validation failed: matches none of the enum values)"},
      {R"({"nodes": {}, "key": 1})",
       R"(property "key" validation failed: wrong type: expected string, got number)"},
      {R"({"nodes": {}, "checks": {"passive": {}}})",
       R"(property "checks" validation failed: object matches none of the required: ["active"] or ["active","passive"])"},
      {R"({"nodes": {}, "checks": {"active": 1}})",
       R"(property "checks" validation failed: property "active" validation failed: wrong type: expected object, got number)"},
      {R"({"nodes": {}, "checks": []})",
       R"(property "checks" validation failed: wrong type: expected object, got table)"},
      {R"({"service_name": "a", "discovery_type": "dns"})", "service discovery is not supported"},
      {R"({"type": "roundrobin"})", "value should match only one schema, but matches none"},
      {R"("x")", "wrong type: expected object, got string"},
  });
}

// APISIX's check_upstream_conf runs after the schema and answers without the
// "invalid configuration: " prefix; the same texts for inline upstreams of routes and services.
TEST(DecodeUpstream, RulesAfterTheSchemaUseAPISIXTexts) {
  struct RuleCase {
    const char* upstream;
    const char* error;
  } cases[] = {
      {R"({"type": "chash", "nodes": {}})", "missing key"},
      {R"({"type": "chash", "hash_on": "header", "nodes": {}})", "missing key"},
      {R"({"nodes": {}, "pass_host": "rewrite"})",
       "`upstream_host` can't be empty when `pass_host` is `rewrite`"},
      // APISIX's patterns for a chash key (schema_def.lua), checked after the schema.
      {R"({"type": "chash", "key": "http_x_user", "nodes": {}})",
       "invalid configuration: failed to match pattern \"^((uri|server_name|server_addr|"
       "request_uri|remote_port|remote_addr|query_string|host|hostname)|arg_[0-9a-zA-z_-]+)$\" "
       "with \"http_x_user\""},
      {R"({"type": "chash", "key": "post_arg_user", "nodes": {}})",
       "invalid configuration: failed to match pattern \"^((uri|server_name|server_addr|"
       "request_uri|remote_port|remote_addr|query_string|host|hostname)|arg_[0-9a-zA-z_-]+)$\" "
       "with \"post_arg_user\""},
      {R"({"type": "chash", "hash_on": "header", "key": "x user", "nodes": {}})",
       "invalid configuration: failed to match pattern \"^[a-zA-Z0-9-_]+$\" with \"x user\""},
      {R"({"type": "chash", "key": "hostname", "nodes": {}})",
       "invalid configuration: chash key hostname is not supported by Sluice yet"},
      {R"({"type": "chash", "hash_on": "vars_combinations", "key": "$http_x${post_arg_y}",
           "nodes": {}})",
       "invalid configuration: chash key variable post_arg_y is not supported yet: matching on "
       "the request body is not implemented"},
      {R"({"type": "chash", "hash_on": "vars_combinations", "key": "$remote_addr$remote_port",
           "nodes": {}})",
       "invalid configuration: chash key variable remote_port is not supported by Sluice"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.upstream);
    auto u = decode_upstream(Json::parse(c.upstream));
    ASSERT_FALSE(u.is_ok());
    EXPECT_EQ(u.status().message(), c.error);
    auto r =
        decode_route(Json::parse(std::string(R"({"uri": "/a", "upstream": )") + c.upstream + "}"));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), c.error);
    auto s = decode_service(Json::parse(std::string(R"({"upstream": )") + c.upstream + "}"));
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.status().message(), c.error);
  }
  EXPECT_TRUE(
      decode_upstream(Json::parse(R"({"type": "chash", "hash_on": "consumer", "nodes": {}})"))
          .is_ok());
  for (const char* ok : {R"({"type": "chash", "key": "remote_addr", "nodes": {}})",
                         R"({"type": "chash", "key": "arg_user-id", "nodes": {}})",
                         R"({"type": "chash", "hash_on": "cookie", "key": "sid", "nodes": {}})",
                         R"({"type": "chash", "hash_on": "vars_combinations",
                             "key": "$http_x ${arg_y}", "nodes": {}})"}) {
    EXPECT_TRUE(decode_upstream(Json::parse(ok)).is_ok()) << ok;
  }
}

TEST(DecodeUpstream, Defaults) {
  auto u = decode_upstream(Json::parse(R"({"nodes": {"127.0.0.1:1980": 1}})"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->type, BalancerType::kRoundRobin);
  EXPECT_FALSE(u->retries.has_value());
  EXPECT_EQ(u->retry_timeout, 0);
  EXPECT_FALSE(u->timeout.has_value());
  EXPECT_EQ(u->keepalive_pool.size, 320);
  EXPECT_EQ(u->keepalive_pool.idle_timeout, 60);
  EXPECT_EQ(u->keepalive_pool.requests, 1000);
  EXPECT_EQ(u->pass_host, PassHost::kPass);
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->hash_on, "vars");
  EXPECT_TRUE(u->checks.is_null());
  EXPECT_TRUE(u->id.empty());
}

TEST(DecodeUpstream, ReadsEveryField) {
  auto u = decode_upstream(Json::parse(R"({"id": 3, "type": "chash", "key": "remote_addr",
      "nodes": {"a.com:81": 2}, "retries": 2, "retry_timeout": 1.5,
      "timeout": {"connect": 1, "send": 2, "read": 3}, "keepalive_pool": {"size": 8},
      "pass_host": "node", "scheme": "http", "checks": {"active": {}}})"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->id, "3");
  EXPECT_EQ(u->type, BalancerType::kChash);
  EXPECT_EQ(u->key, "remote_addr");
  EXPECT_EQ(u->retries, 2);
  EXPECT_EQ(u->retry_timeout, 1.5);
  EXPECT_EQ(u->timeout->send, 2);
  EXPECT_EQ(u->keepalive_pool.size, 8);
  EXPECT_EQ(u->keepalive_pool.requests, 1000);
  EXPECT_EQ(u->pass_host, PassHost::kNode);
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->checks, Json::parse(R"({"active": {}})"));
}

// Port-less nodes get the scheme's default port.
TEST(FillDefaultPorts, SchemeDecidesThePort) {
  for (const auto& [scheme, port] : std::vector<std::pair<std::string, uint16_t>>{
           {"http", 80}, {"https", 443}, {"grpc", 80}, {"grpcs", 443}}) {
    std::vector<UpstreamNodeConf> nodes(2);
    nodes[0].host = "a.com";
    nodes[0].port = 0;  // as decode_upstream_nodes leaves a port-less node
    nodes[1].host = "b.com";
    nodes[1].port = 8080;
    fill_default_ports(&nodes, scheme);
    EXPECT_EQ(nodes[0].port, port) << scheme;
    EXPECT_EQ(nodes[1].port, 8080) << scheme;
  }
}

struct NodeCase {
  const char* json;
  const char* host;
  uint16_t port;
  int weight;
};

TEST(DecodeUpstream, NodeAddresses) {
  const NodeCase cases[] = {
      {R"({"nodes": {"127.0.0.1:1980": 3}})", "127.0.0.1", 1980, 3},
      {R"({"nodes": {"127.0.0.1": 1}})", "127.0.0.1", 80, 1},
      {R"({"nodes": {"[::1]:8080": 0}})", "::1", 8080, 0},
      {R"({"nodes": {"[::1]": 1}})", "::1", 80, 1},
      {R"({"nodes": {"::1": 1}})", "::1", 80, 1},
      {R"({"nodes": [{"host": "a.com", "weight": 5}]})", "a.com", 80, 5},
      {R"({"nodes": [{"host": "[::1]", "port": 81, "weight": 1}]})", "::1", 81, 1},
      {R"({"nodes": [{"host": "::1", "port": 81, "weight": 1}]})", "::1", 81, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto u = decode_upstream(Json::parse(c.json));
    ASSERT_TRUE(u.is_ok()) << u.status().message();
    ASSERT_EQ(u->nodes.size(), 1u);
    EXPECT_EQ(u->nodes[0].host, c.host);
    EXPECT_EQ(u->nodes[0].port, c.port);
    EXPECT_EQ(u->nodes[0].weight, c.weight);
  }
}

TEST(DecodeUpstream, NodePriorityIsKept) {
  auto u = decode_upstream(Json::parse(
      R"({"nodes": [{"host": "a", "weight": 1, "priority": 2}, {"host": "b", "weight": 1}]})"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  ASSERT_EQ(u->nodes.size(), 2u);
  EXPECT_EQ(u->nodes[0].priority, 2);
  EXPECT_EQ(u->nodes[1].priority, 0);
}

}  // namespace resources_upstream_test
}  // namespace sluice::config
