// consumers, global_rules, plugin_configs, consumer_groups, plugin_metadata, protos, secrets,
// stream_routes: cases run through validate_resource, as the Admin API calls it.

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "config/resources.h"
#include "config/validate.h"

namespace sluice::config {
namespace resources_kinds_test {

struct Case {
  const char* id;  // the URL id validate_resource gets
  std::string json;
  std::string error;  // exact; empty = valid
};

void run_cases(const char* kind, const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(kind + (" " + c.json));
    common::Status s = validate_resource(kind, c.id, Json::parse(c.json));
    if (c.error.empty()) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), c.error);
    }
  }
}

const std::string kIc = "invalid configuration: ";

std::string prop(const char* name, const std::string& inner) {
  return kIc + "property \"" + name + "\" validation failed: " + inner;
}

TEST(DecodeConsumer, Cases) {
  run_cases(
      "consumers",
      {
          {"", R"({"username": "jack"})", ""},
          {"", R"({"username": "a-b_C9", "desc": "d", "labels": {"a": "b"}, "plugins": {},
                   "group_id": "g1", "create_time": 1, "update_time": 2})",
           ""},
          {"", R"({})", kIc + R"(property "username" is required)"},
          {"", R"({"username": 1})", prop("username", "wrong type: expected string, got number")},
          {"", R"({"username": ""})",
           prop("username", "string too short, expected at least 1, got 0")},
          {"", R"({"username": ")" + std::string(101, 'a') + R"("})",
           prop("username", "string too long, expected at most 100, got 101")},
          {"", R"({"username": "a b"})",
           prop("username", R"(failed to match pattern "^[a-zA-Z0-9_\-]+$" with "a b")")},
          {"", R"({"username": "jack", "id": "1"})",
           kIc + "additional properties forbidden, found id"},
          {"", R"({"username": "jack", "plugins": {"key-auth": {"key": "k"}}})", ""},
          {"", R"({"username": "jack", "plugins": {"key-auth": {}}})",
           "invalid plugins configuration: failed to check the configuration of plugin key-auth "
           "err: property \"key\" is required"},
          {"", R"({"username": "jack", "plugins": {"openid-connect": {}}})",
           "invalid plugins configuration: unknown plugin [openid-connect]"},
          {"", R"({"username": "jack", "plugins": {"key-auth": true}})",
           "invalid plugins configuration: invalid plugin conf true for plugin [key-auth]"},
          {"",
           R"({"username": "jack", "plugins": {"limit-count": {"count": 1, "time_window": 1}}})",
           ""},
          {"", R"({"username": "jack", "plugins": {"limit-count": {"count": 1}}})",
           "invalid plugins configuration: failed to check the configuration of plugin "
           "limit-count err: property \"time_window\" is required"},
          {"", R"({"username": "jack", "plugins": []})",
           prop("plugins", "wrong type: expected object, got table")},
          {"", R"({"username": "jack", "group_id": "a b"})",
           prop("group_id", "object matches none of the required")},
          {"", R"({"username": "jack", "create_time": -1})",
           prop("create_time", "expected -1 to be at least 0")},
          {"", R"({"username": "jack", "desc": 1})",
           prop("desc", "wrong type: expected string, got number")},
          {"", R"({"username": "jack", "labels": {"a": 1}})",
           prop(
               "labels",
               R"(failed to validate a (matching ".*"): wrong type: expected string, got number)")},
          {"", R"([])", kIc + "wrong type: expected object, got table"},
      });
  auto c = decode_consumer(Json::parse(R"({"username": "jack", "group_id": 5})"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->id, "jack");
  EXPECT_EQ(c->username, "jack");
  EXPECT_EQ(c->group_id, "5");
  EXPECT_TRUE(c->plugins.is_null());
}

TEST(DecodeGlobalRule, Cases) {
  run_cases(
      "global_rules",
      {
          {"", R"({"plugins": {}})", ""},
          {"", R"({"id": 1, "plugins": {}, "create_time": 1, "update_time": 2})", ""},
          {"", R"({})", kIc + R"(property "plugins" is required)"},
          {"", R"({"plugins": {}, "name": "x"})",
           kIc + "additional properties forbidden, found name"},
          {"", R"({"plugins": 1})", prop("plugins", "wrong type: expected object, got number")},
          {"", R"({"plugins": {"no-such-plugin": {}}})", "unknown plugin [no-such-plugin]"},
          {"", R"({"plugins": {"prometheus": 1}})",
           "invalid plugin conf 1 for plugin [prometheus]"},
          {"", R"({"plugins": {"prometheus": {}}})", ""},
          {"", R"({"plugins": {"prometheus": {"prefer_name": true},
                               "limit-count": {"count": 5, "time_window": 1}}})",
           ""},
          {"", R"({"plugins": {"prometheus": {"prefer_name": "yes"}}})",
           "failed to check the configuration of plugin prometheus err: property "
           "\"prefer_name\" validation failed: wrong type: expected boolean, got string"},
          {"", R"({"id": 0, "plugins": {}})", prop("id", "object matches none of the required")},
          {"", R"({"plugins": {}, "update_time": "x"})",
           prop("update_time", "wrong type: expected integer, got string")},
      });
  auto g = decode_global_rule(Json::parse(R"({"id": "g", "plugins": {}})"));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->id, "g");
  EXPECT_TRUE(g->plugins.is_object());
}

// plugin_configs and consumer_groups share one schema.
std::vector<Case> plugin_set_cases() {
  return {
      {"", R"({"plugins": {}})", ""},
      {"", R"({"id": "pc1", "name": "n", "desc": "d", "labels": {"k": "v"}, "plugins": {},
               "create_time": 1, "update_time": 2})",
       ""},
      {"", R"({"desc": "d"})", kIc + R"(property "plugins" is required)"},
      {"", R"({"plugins": {}, "uri": "/"})", kIc + "additional properties forbidden, found uri"},
      {"", R"({"plugins": {}, "name": ""})",
       prop("name", "string too short, expected at least 1, got 0")},
      {"", R"({"plugins": {}, "desc": ")" + std::string(257, 'd') + R"("})",
       prop("desc", "string too long, expected at most 256, got 257")},
      {"", R"({"plugins": "x"})", prop("plugins", "wrong type: expected object, got string")},
      {"", R"({"plugins": {"openid-connect": {}}})", "unknown plugin [openid-connect]"},
      {"", R"({"plugins": {"limit-count": {"count": 1, "time_window": 60}}})", ""},
      {"", R"({"plugins": {"limit-count": {"count": 1, "time_window": 60,
                                           "key_type": "header"}}})",
       "failed to check the configuration of plugin limit-count err: property \"key_type\" "
       "validation failed: matches none of the enum values"},
      {"", R"({"id": "a/b", "plugins": {}})", prop("id", "object matches none of the required")},
  };
}

TEST(DecodePluginConfig, Cases) {
  run_cases("plugin_configs", plugin_set_cases());
  auto p = decode_plugin_config(Json::parse(R"({"id": 3, "name": "n", "plugins": {}})"));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->id, "3");
  EXPECT_EQ(p->name, "n");
}

TEST(DecodeConsumerGroup, Cases) {
  run_cases("consumer_groups", plugin_set_cases());
  auto g =
      decode_consumer_group(Json::parse(R"({"id": "g", "labels": {"a": "b"}, "plugins": {}})"));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->labels.at("a"), "b");
}

TEST(DecodePluginMetadata, NeedsAKnownPlugin) {
  run_cases(
      "plugin_metadata",
      {
          {"kafka-logger", R"({"log_format": {}})", "unknown plugin [kafka-logger]"},
          {"", R"({"id": "kafka-logger"})", "unknown plugin [kafka-logger]"},
          {"", R"({})", "missing plugin name"},
          {"", R"({"id": 1})", "missing plugin name"},
          {"prometheus", R"({})", ""},
          {"", R"({"id": "prometheus"})", ""},
          {"limit-count", R"({"limit_header": "X-Limit"})",
           "invalid configuration: limit-count metadata (limit_header, remaining_header, "
           "reset_header) is not supported by Sluice yet"},
          {"limit-count", R"({})", ""},
          {"prometheus", R"({"id": "limit-count"})", "wrong plugin_metadata id"},
          {"prometheus", R"([])", "invalid configuration: wrong type: expected object, got table"},
      });
  auto m = decode_plugin_metadata("prometheus", Json::parse(R"({"id": "prometheus", "a": 1})"));
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->id, "prometheus");
  EXPECT_EQ(m->value, Json::parse(R"({"a": 1})"));
  auto u = decode_plugin_metadata("openid-connect", Json::object());
  ASSERT_FALSE(u.is_ok());
  EXPECT_EQ(u.status().message(), "unknown plugin [openid-connect]");
}

TEST(DecodeProto, Cases) {
  run_cases(
      "protos",
      {
          {"", R"({"content": "syntax = \"proto3\";"})", ""},
          {"", R"({"id": 1, "name": "p", "desc": "d", "labels": {"a": "b"}, "content": "x",
                         "create_time": 1, "update_time": 2})",
           ""},
          {"", R"({})", kIc + R"(property "content" is required)"},
          {"", R"({"content": ""})",
           prop("content", "string too short, expected at least 1, got 0")},
          {"", R"({"content": 1})", prop("content", "wrong type: expected string, got number")},
          {"", R"({"content": "x", "plugins": {}})",
           kIc + "additional properties forbidden, found plugins"},
      });
  auto p = decode_proto(Json::parse(R"({"id": "p1", "content": "message A {}"})"));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p->content, "message A {}");
}

constexpr const char* kUriPattern =
    R"(failed to match pattern "^[^\/]+:\/\/([\da-zA-Z.-]+|\[[\da-fA-F:]+\])(:\d+)?" with )";

TEST(DecodeSecret, Vault) {
  run_cases(
      "secrets",
      {
          {"vault/1", R"({"uri": "http://127.0.0.1:8200", "prefix": "kv/apisix", "token": "t"})",
           ""},
          {"vault/1", R"({"id": "vault/1", "uri": "https://[::1]:8200", "prefix": "p",
                          "token": "t", "namespace": "ns", "create_time": 1, "update_time": 2})",
           ""},
          {"", R"({"id": "vault/x.y", "uri": "http://vault", "prefix": "p", "token": "t"})", ""},
          {"vault/1", R"({"prefix": "p", "token": "t"})", kIc + R"(property "uri" is required)"},
          {"vault/1", R"({"uri": "http://v", "token": "t"})",
           kIc + R"(property "prefix" is required)"},
          {"vault/1", R"({"uri": "http://v", "prefix": "p"})",
           kIc + R"(property "token" is required)"},
          {"vault/1", R"({"uri": "127.0.0.1:8200", "prefix": "p", "token": "t"})",
           prop("uri", std::string(kUriPattern) + R"("127.0.0.1:8200")")},
          {"vault/1", R"({"uri": "http://[zz]", "prefix": "p", "token": "t"})",
           prop("uri", std::string(kUriPattern) + R"("http://[zz]")")},
          {"vault/1", R"({"uri": "http://v", "prefix": "p", "token": 1})",
           prop("token", "wrong type: expected string, got number")},
          {"vault/1", R"({"uri": "http://v", "prefix": "p", "token": "t", "foo": 1})",
           kIc + "additional properties forbidden, found foo"},
          {"vault/1", R"({"uri": "http://v", "prefix": "p", "token": "t", "id": "aws/1"})",
           prop("id", R"(failed to match pattern "^vault/[a-zA-Z0-9-_.]+$" with "aws/1")")},
          {"vault/1", R"({"uri": "http://v", "prefix": "p", "token": "t", "id": "vault/a b"})",
           prop("id", R"(failed to match pattern "^vault/[a-zA-Z0-9-_.]+$" with "vault/a b")")},
          {"vault/1", R"([])", kIc + "wrong type: expected object, got table"},
      });
}

TEST(DecodeSecret, AwsAndManagers) {
  run_cases(
      "secrets",
      {
          {"aws/1", R"({"access_key_id": "a", "secret_access_key": "s"})", ""},
          {"aws/1", R"({"access_key_id": "a", "secret_access_key": "s", "session_token": "t",
                        "region": "eu-west-1", "endpoint_url": "http://localhost:4566"})",
           ""},
          {"aws/1", R"({"access_key_id": "a"})",
           kIc + R"(property "secret_access_key" is required)"},
          {"aws/1", R"({"access_key_id": "a", "secret_access_key": "s", "endpoint_url": "x"})",
           prop("endpoint_url", std::string(kUriPattern) + R"("x")")},
          {"aws/1", R"({"access_key_id": "a", "secret_access_key": "s", "uri": "http://v"})",
           kIc + "additional properties forbidden, found uri"},
          {"gcp/1", R"({})", "invalid secret manager: gcp"},
          {"", R"({"id": "gcp/1"})", "invalid secret manager: gcp"},
          {"", R"({})", "missing secret type"},
      });
  auto s = decode_secret("aws", Json::parse(R"({"access_key_id": "a", "secret_access_key": "s"})"));
  ASSERT_TRUE(s.is_ok()) << s.status().message();
  EXPECT_EQ(s->manager, "aws");
  EXPECT_EQ(s->id, "");
  EXPECT_EQ(std::get<AwsSecretConf>(s->conf).region, "us-east-1");
  auto bad = decode_secret_item(Json::parse(R"({"id": 1})"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), prop("id", "wrong type: expected string, got number"));
  bad = decode_secret_item(Json::parse(R"({"uri": "http://v"})"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), kIc + R"(property "id" is required)");
}

TEST(DecodeStreamRoute, Cases) {
  run_cases(
      "stream_routes",
      {
          {"", R"({})", ""},
          {"", R"({"upstream_id": 1})", ""},
          {"", R"({"id": 1, "name": "s", "desc": "d", "labels": {"a": "b"},
                   "remote_addr": "10.0.0.0/8", "server_addr": "::1", "server_port": 9100,
                   "sni": "*.a.com", "upstream": {"nodes": {"127.0.0.1:80": 1}}, "plugins": {},
                   "protocol": {"name": "redis", "conf": {}, "superior_id": 2, "logger": []},
                   "create_time": 1, "update_time": 2})",
           ""},
          {"", R"({"server_port": 0})", prop("server_port", "expected 0 to be at least 1")},
          {"", R"({"server_port": 65536})",
           prop("server_port", "expected 65536 to be at most 65535")},
          {"", R"({"server_port": "80"})",
           prop("server_port", "wrong type: expected integer, got string")},
          {"", R"({"remote_addr": "abc"})",
           prop("remote_addr", "object matches none of the required")},
          {"", R"({"server_addr": "1.2.3.4/33"})",
           prop("server_addr", "object matches none of the required")},
          {"", R"({"sni": "a b"})",
           prop("sni", R"(failed to match pattern "^\*?[0-9a-zA-Z-._]+$" with "a b")")},
          {"", R"({"protocol": {}})", prop("protocol", R"(property "name" is required)")},
          {"", R"({"protocol": {"name": "redis", "x": 1}})",
           prop("protocol", "additional properties forbidden, found x")},
          {"", R"({"protocol": {"name": "redis", "conf": []}})",
           prop("protocol",
                R"(property "conf" validation failed: wrong type: expected object, got table)")},
          {"", R"({"plugins": {"ip-restriction": {}}})", "unknown plugin [ip-restriction]"},
          {"", R"({"uri": "/"})", kIc + "additional properties forbidden, found uri"},
          {"", R"({"upstream": {}})",
           prop("upstream",
                "value should match only one schema, but matches none (an upstream needs nodes)")},
          {"", R"({"service_id": "a b"})",
           prop("service_id", "object matches none of the required")},
      });
  auto r = decode_stream_route(Json::parse(
      R"({"id": "s", "server_addr": "127.0.0.1", "server_port": 9100, "upstream_id": "u",
          "protocol": {"name": "redis"}})"));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->server_port, 9100);
  EXPECT_EQ(r->server_addr, "127.0.0.1");
  EXPECT_EQ(r->upstream_id, "u");
  EXPECT_EQ(r->protocol["name"], "redis");
}

}  // namespace resources_kinds_test
}  // namespace sluice::config
