#include "config/standalone.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

namespace sluice::config {
namespace standalone_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kMissingEnd =
    "apisix.yaml: missing the #END line at the end (the file may be partly written)";

TEST(Standalone, EndMarker) {
  const char* valid[] = {"#END", "#END\n", "routes: []\n#END\n\n  \n", "\n#END \t\n",
                         "upstreams: []\n#END"};
  for (const char* text : valid) {
    SCOPED_TRACE(text);
    auto r = parse_standalone(text);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
  }
  const char* invalid[] = {"",    "routes: []\n", "#END\nroutes: []\n",
                           "#EN", "#END x\n",     "routes: [] #ENDx\n"};
  for (const char* text : invalid) {
    SCOPED_TRACE(text);
    auto r = parse_standalone(text);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), kMissingEnd);
  }
}

TEST(Standalone, EmptyFileIsAnEmptyConfig) {
  auto r = parse_standalone("# nothing yet\n#END\n");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->routes.empty());
  EXPECT_TRUE(r->services.empty());
  EXPECT_TRUE(r->upstreams.empty());
  EXPECT_TRUE(r->warnings.empty());
}

TEST(Standalone, DecodesEveryServedKind) {
  auto r = parse_standalone(R"(
routes:
  - id: 1
    uri: /hello
    service_id: s1
    create_time: 1700000000
  - id: r2
    uris: ["/a", "/b"]
    upstream_id: u1
services:
  - id: s1
    upstream_id: u1
upstreams:
  - id: u1
    nodes:
      "127.0.0.1:1980": 1
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->routes.size(), 2u);
  EXPECT_EQ(r->routes[0].id, "1");
  EXPECT_EQ(r->routes[0].create_time, 1700000000);
  EXPECT_EQ(r->routes[1].uris.size(), 2u);
  ASSERT_EQ(r->services.size(), 1u);
  ASSERT_EQ(r->upstreams.size(), 1u);
  EXPECT_EQ(r->upstreams[0].nodes.at(0).port, 1980);
}

// Only the kinds the snapshot builder does not serve are named, without a file prefix (the
// gateway puts the file's path in front); global_rules and plugin_configs are served.
TEST(Standalone, KindsNotServedAreNamedInAWarning) {
  auto r = parse_standalone(R"(
consumers:
  - username: jack
global_rules:
  - id: g1
    plugins: {}
plugin_metadata: []
ssls:
stream_routes: []
protos:
  - id: p1
    content: syntax = "proto3";
consumer_groups: []
secrets: []
plugin_configs:
  - id: pc1
    plugins: {}
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_THAT(r->warnings,
              ::testing::ElementsAre("protos (1 items) are stored but not served yet"));
}

// APISIX (core/config_yaml.lua) names an item without an id `<kind>#<n>`, n counting from 1.
TEST(Standalone, ItemsWithoutIdAreNamedByPosition) {
  auto r = parse_standalone(R"(
routes:
  - uri: /a
    upstream:
      nodes:
        "127.0.0.1:1980": 1
  - id: r2
    uri: /b
    upstream_id: u1
  - uri: /c
    service_id: s1
upstreams:
  - nodes:
      "127.0.0.1:1981": 1
  - id: u1
    nodes:
      "127.0.0.1:1982": 1
services:
  - id: s1
    upstream_id: u1
  - upstream_id: u1
global_rules:
  - plugins: {}
plugin_configs:
  - plugins: {}
protos:
  - content: x
consumer_groups:
  - plugins: {}
stream_routes:
  - server_port: 9100
    upstream:
      nodes:
        "127.0.0.1:6379": 1
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->routes.size(), 3u);
  EXPECT_EQ(r->routes[0].id, "routes#1");
  EXPECT_EQ(r->routes[1].id, "r2");
  EXPECT_EQ(r->routes[2].id, "routes#3");
  ASSERT_EQ(r->upstreams.size(), 2u);
  EXPECT_EQ(r->upstreams[0].id, "upstreams#1");
  EXPECT_EQ(r->upstreams[1].id, "u1");
  ASSERT_EQ(r->services.size(), 2u);
  EXPECT_EQ(r->services[1].id, "services#2");
  EXPECT_EQ(r->global_rules.at(0).id, "global_rules#1");
  EXPECT_EQ(r->plugin_configs.at(0).id, "plugin_configs#1");
  EXPECT_EQ(r->protos.at(0).id, "protos#1");
  EXPECT_EQ(r->consumer_groups.at(0).id, "consumer_groups#1");
  EXPECT_EQ(r->stream_routes.at(0).id, "stream_routes#1");
}

TEST(Standalone, DecodesEveryStoredKind) {
  auto r = parse_standalone(R"(
consumers:
  - username: jack
    desc: d
    group_id: g1
consumer_groups:
  - id: g1
    plugins: {}
global_rules:
  - id: 1
    plugins: {}
plugin_configs:
  - id: pc
    name: n
    plugins: {}
stream_routes:
  - id: s1
    server_port: 9100
    upstream:
      nodes:
        "127.0.0.1:6379": 1
protos:
  - id: 7
    content: x
secrets:
  - id: vault/1
    uri: http://127.0.0.1:8200
    prefix: kv/apisix
    token: t
  - id: aws/1
    access_key_id: a
    secret_access_key: s
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->consumers.size(), 1u);
  EXPECT_EQ(r->consumers[0].id, "jack");
  EXPECT_EQ(r->consumers[0].group_id, "g1");
  ASSERT_EQ(r->consumer_groups.size(), 1u);
  EXPECT_TRUE(r->consumer_groups[0].plugins.is_object());
  ASSERT_EQ(r->global_rules.size(), 1u);
  EXPECT_EQ(r->global_rules[0].id, "1");
  ASSERT_EQ(r->plugin_configs.size(), 1u);
  EXPECT_EQ(r->plugin_configs[0].name, "n");
  ASSERT_EQ(r->stream_routes.size(), 1u);
  EXPECT_EQ(r->stream_routes[0].server_port, 9100);
  ASSERT_TRUE(r->stream_routes[0].upstream.has_value());
  EXPECT_EQ(r->stream_routes[0].upstream->nodes.at(0).port, 6379);
  ASSERT_EQ(r->protos.size(), 1u);
  EXPECT_EQ(r->protos[0].id, "7");
  ASSERT_EQ(r->secrets.size(), 2u);
  EXPECT_EQ(r->secrets[0].id, "vault/1");
  EXPECT_EQ(r->secrets[0].manager, "vault");
  EXPECT_EQ(std::get<VaultSecretConf>(r->secrets[0].conf).prefix, "kv/apisix");
  EXPECT_EQ(r->secrets[1].manager, "aws");
  EXPECT_EQ(std::get<AwsSecretConf>(r->secrets[1].conf).region, "us-east-1");
  // Only the kinds not served are named: stream_routes, protos and secrets.
  EXPECT_EQ(r->warnings.size(), 3u);
}

struct ErrorCase {
  const char* text;
  const char* error;  // expected prefix
};

TEST(Standalone, Errors) {
  const ErrorCase cases[] = {
      {"routes:\n  - id: 1\n    uri: /a\n    upstream_id: 1\n  - id: 2\n    uri: /b\n"
       "    upstream_id: 1\n  - id: \"5\"\n    uri: 5\n    upstream_id: 1\n#END\n",
       R"(apisix.yaml: routes[2] (id "5"): invalid configuration: property "uri" validation failed: wrong type: expected string, got number)"},
      {"routes:\n  - id: 7\n    uri: a\n    upstream_id: 1\n#END\n",
       R"(apisix.yaml: routes[0] (id "7"): invalid configuration: property "uri" validation failed: failed to match pattern)"},
      // A positional id cannot be referred to: `#` is outside the id pattern, as in APISIX.
      {"routes:\n  - uri: /a\n    upstream_id: \"upstreams#1\"\nupstreams:\n  - nodes: {}\n#END\n",
       R"(apisix.yaml: routes[0]: invalid configuration: property "upstream_id" validation failed)"},
      // Where the id says what the item is for, it stays required.
      {"plugin_metadata:\n  - log_format: {}\n#END\n",
       "apisix.yaml: plugin_metadata[0]: missing id"},
      {"secrets:\n  - uri: http://127.0.0.1:8200\n#END\n", "apisix.yaml: secrets[0]: missing id"},
      {"routes:\n  - id: 1\n    uri: /a\n    upstream_id: 1\n  - id: \"1\"\n    uri: /b\n"
       "    upstream_id: 1\n#END\n",
       R"(apisix.yaml: routes[1] (id "1"): duplicate id, also used by routes[0])"},
      {"services:\n  - id: s\n  - id: s\n#END\n",
       R"(apisix.yaml: services[1] (id "s"): duplicate id, also used by services[0])"},
      {"routes:\n  - 5\n#END\n",
       "apisix.yaml: routes[0]: invalid configuration: wrong type: expected object, got number"},
      {"routes: {}\n#END\n", "apisix.yaml: routes: wrong type: expected array, got table"},
      {"consumers: 1\n#END\n", "apisix.yaml: consumers: wrong type: expected array, got number"},
      {"route: []\n#END\n", "apisix.yaml: unknown top-level key \"route\""},
      {"- 1\n#END\n", "apisix.yaml: the top level must be a mapping, got array"},
      {"routes: [\n#END\n", "apisix.yaml: line "},
      {"upstreams:\n  - id: u\n    nodes: {}\n    discovery_type: dns\n#END\n",
       R"(apisix.yaml: upstreams[0] (id "u"): invalid configuration: service discovery is not supported)"},
      {"routes:\n  - id: 1\n    uri: /a\n    plugins:\n      openid-connect: {}\n#END\n",
       R"(apisix.yaml: routes[0] (id "1"): unknown plugin [openid-connect])"},
      {"routes:\n  - id: 1\n    uri: /a\n    plugins:\n      limit-count: {count: 1}\n#END\n",
       R"(apisix.yaml: routes[0] (id "1"): failed to check the configuration of plugin limit-count err: property "time_window" is required)"},
      {"global_rules:\n  - id: 1\n    plugins:\n      prometheus: {prefer_name: x}\n#END\n",
       R"(apisix.yaml: global_rules[0] (id "1"): failed to check the configuration of plugin prometheus err: property "prefer_name" validation failed: wrong type: expected boolean, got string)"},
      {"plugin_metadata:\n  - id: kafka-logger\n#END\n",
       R"(apisix.yaml: plugin_metadata[0] (id "kafka-logger"): unknown plugin [kafka-logger])"},
      {"plugin_metadata:\n  - id: 5\n#END\n",
       R"(apisix.yaml: plugin_metadata[0] (id "5"): invalid configuration: property "id" validation failed: wrong type: expected string, got number)"},
      {"consumers:\n  - desc: d\n#END\n", "apisix.yaml: consumers[0]: missing username"},
      {"consumers:\n  - username: jack\n  - username: jack\n#END\n",
       R"(apisix.yaml: consumers[1] (username "jack"): duplicate id, also used by consumers[0])"},
      {"consumers:\n  - username: a b\n#END\n",
       R"(apisix.yaml: consumers[0] (username "a b"): invalid configuration: property "username" validation failed: failed to match pattern)"},
      {"global_rules:\n  - id: 1\n#END\n",
       R"(apisix.yaml: global_rules[0] (id "1"): invalid configuration: property "plugins" is required)"},
      {"secrets:\n  - id: gcp/1\n#END\n",
       R"(apisix.yaml: secrets[0] (id "gcp/1"): invalid secret manager: gcp)"},
      {"secrets:\n  - id: vault/1\n    prefix: p\n    token: t\n#END\n",
       R"(apisix.yaml: secrets[0] (id "vault/1"): invalid configuration: property "uri" is required)"},
      {"ssls:\n  - id: 1\n    sni: a.com\n#END\n",
       R"(apisix.yaml: ssls[0] (id "1"): invalid configuration: value should match only one schema, but matches none)"},
      {"stream_routes:\n  - id: 1\n    server_port: 0\n#END\n",
       R"(apisix.yaml: stream_routes[0] (id "1"): invalid configuration: property "server_port" validation failed: expected 0 to be at least 1)"},
      {"protos: {}\n#END\n", "apisix.yaml: protos: wrong type: expected array, got table"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = parse_standalone(c.text);
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(), StartsWith(c.error));
  }
}

TEST(Standalone, SubstitutesEnvironmentValues) {
  setenv("SLUICE_T_NODE", "10.1.2.3:8080", 1);
  setenv("SLUICE_T_WEIGHT", "4", 1);
  unsetenv("SLUICE_T_MISSING");
  auto r = parse_standalone(R"(
upstreams:
  - id: u
    nodes:
      "${{SLUICE_T_NODE}}": ${{SLUICE_T_WEIGHT}}
    retries: ${{ SLUICE_T_MISSING := 2 }}
# a comment naming ${{SLUICE_T_MISSING}} is not substituted
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->upstreams[0].nodes.size(), 1u);
  EXPECT_EQ(r->upstreams[0].nodes[0].host, "10.1.2.3");
  EXPECT_EQ(r->upstreams[0].nodes[0].port, 8080);
  EXPECT_EQ(r->upstreams[0].nodes[0].weight, 4);
  EXPECT_EQ(r->upstreams[0].retries, 2);

  auto bad = parse_standalone("routes:\n  - id: ${{SLUICE_T_MISSING}}\n#END\n");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "apisix.yaml: failed to handle configuration: can't find environment variable "
            "SLUICE_T_MISSING");
}

std::string read_shipped(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "../../../conf" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Standalone, ShippedApisixYamlParses) {
  std::string text = read_shipped("apisix.yaml");
  ASSERT_FALSE(text.empty()) << "conf/apisix.yaml not found next to " << __FILE__;
  auto r = parse_standalone(text);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->routes.size(), 1u);
  EXPECT_EQ(r->routes[0].uris, std::vector<std::string>{"/hello"});
  ASSERT_TRUE(r->routes[0].upstream.has_value());
  const auto& up = *r->routes[0].upstream;
  EXPECT_EQ(up.type, BalancerType::kRoundRobin);
  ASSERT_EQ(up.nodes.size(), 1u);
  EXPECT_EQ(up.nodes[0].host, "127.0.0.1");
  EXPECT_EQ(up.nodes[0].port, 1980);
  EXPECT_TRUE(r->warnings.empty());
}

}  // namespace standalone_test
}  // namespace sluice::config

namespace sluice::config {
namespace standalone_test {

// APISIX 3.7+'s apisix.yaml lists a consumer's credentials among the consumers, each with the
// id `<username>/credentials/<id>` (its etcd key's tail).
TEST(Standalone, CredentialsAreConsumersItemsWithACredentialId) {
  auto r = parse_standalone(R"(
consumers:
  - username: john
  - id: john/credentials/john-a
    desc: first
    plugins: {}
  - id: john/credentials/john-b
#END
)");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ(r->consumers.size(), 1u);
  EXPECT_EQ(r->consumers[0].username, "john");
  ASSERT_EQ(r->credentials.size(), 2u);
  EXPECT_EQ(r->credentials[0].consumer, "john");
  EXPECT_EQ(r->credentials[0].id, "john-a");
  EXPECT_EQ(r->credentials[0].desc, "first");
  EXPECT_EQ(r->credentials[1].id, "john-b");

  struct Case {
    const char* yaml;
    const char* error;
  };
  const Case cases[] = {
      {"consumers:\n  - id: nobody/credentials/a\n#END\n",
       "apisix.yaml: consumers[0] (id \"nobody/credentials/a\"): consumer not found: no consumers "
       "item has username \"nobody\""},
      {"consumers:\n  - username: john\n  - id: john/credentials/a\n  - id: john/credentials/a\n"
       "#END\n",
       "apisix.yaml: consumers[2] (id \"john/credentials/a\"): duplicate id, also used by "
       "consumers[1]"},
      {"consumers:\n  - username: john\n  - id: john/credentials/a\n    plugins:\n"
       "      limit-count: {count: 1, time_window: 1}\n#END\n",
       "apisix.yaml: consumers[1] (id \"john/credentials/a\"): only supports auth type plugins "
       "in consumer credential"},
      {"consumers:\n  - id: john/a\n#END\n", "apisix.yaml: consumers[0]: missing username"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto bad = parse_standalone(c.yaml);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_EQ(bad.status().message(), c.error);
  }
}

}  // namespace standalone_test
}  // namespace sluice::config
