#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/resources.h"

namespace sluice::config {
namespace resources_route_test {

using ::testing::StartsWith;

struct Case {
  const char* json;
  const char* error;  // expected message prefix; nullptr = valid
};

constexpr const char* kIc = "invalid configuration: ";

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_route(Json::parse(c.json));
    if (c.error == nullptr) {
      EXPECT_TRUE(r.is_ok()) << r.status().message();
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_THAT(r.status().message(), StartsWith(std::string(kIc) + c.error));
    }
  }
}

TEST(DecodeRoute, ValidRoutes) {
  run_cases({
      {R"({"uri": "/hello", "upstream_id": 1})", nullptr},
      {R"({"uris": ["/a", "/b*"], "service_id": "svc"})", nullptr},
      {R"({"uri": "/", "plugins": {}})", nullptr},
      {R"({"uri": "/a", "plugin_config_id": "pc.1"})", nullptr},
      {R"({"id": 1, "name": "r", "desc": "", "labels": {"env": "prod"}, "uri": "/a",
           "host": "*.foo.com", "remote_addr": "10.0.0.0/8", "methods": ["GET", "PURGE"],
           "priority": -3, "vars": [["arg_a", "==", "1"]], "plugins": {},
           "timeout": {"connect": 1, "send": 2.5, "read": 3}, "enable_websocket": true,
           "status": 0, "create_time": 1700000000, "update_time": 1700000001,
           "upstream": {"nodes": {"127.0.0.1:80": 1}}})",
       nullptr},
      {R"({"uri": "/a", "methods": [], "upstream_id": "u"})", nullptr},
      {R"({"uri": "/a", "hosts": ["a.com", "b.com"], "remote_addrs": ["::1"], "upstream_id": 1})",
       nullptr},
      {R"({"uri": "/a", "upstream_id": 1, "priority": 2.0})", nullptr},
  });
}

TEST(DecodeRoute, UnknownAndUnsupportedFields) {
  run_cases({
      {R"({"uri": "/a", "upstream_id": 1, "foo": 1})",
       "additional properties forbidden, found foo"},
      {R"({"uri": "/a", "upstream_id": 1, "filter_func": "function(vars) return true end"})",
       "filter_func is not supported: it is a Lua function run on each request, and Sluice runs "
       "no Lua; express the condition with vars instead"},
      {R"({"uri": "/a", "script": "local _M = {} return _M"})", "script is not supported"},
      {R"([1])", "wrong type: expected object, got table"},
  });
}

// APISIX's jsonschema counts characters (utf8_len), not bytes: a 100-character name in a
// two-byte script is 200 bytes and valid.
TEST(DecodeRoute, NameLengthCountsCharacters) {
  std::string name;
  for (int i = 0; i < 100; ++i) {
    name += "\xc3\xa9";  // U+00E9
  }
  Json route = Json::parse(R"({"uri": "/a", "upstream_id": 1})");
  route["name"] = name;
  EXPECT_TRUE(decode_route(route).is_ok());
  route["name"] = name + "x";
  auto r = decode_route(route);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(
      r.status().message(),
      std::string(kIc) +
          R"(property "name" validation failed: string too long, expected at most 100, got 101)");
}

TEST(DecodeRoute, FieldTypesAndRanges) {
  run_cases({
      {R"({"uri": 1, "upstream_id": 1})",
       R"(property "uri" validation failed: wrong type: expected string, got number)"},
      {R"({"uri": "a", "upstream_id": 1})",
       R"(property "uri" validation failed: failed to match pattern "^/" with "a")"},
      {R"({"uri": "", "upstream_id": 1})",
       R"(property "uri" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"uris": [], "upstream_id": 1})",
       R"(property "uris" validation failed: expect array to have at least 1 items)"},
      {R"({"uris": ["/a", "/a"], "upstream_id": 1})",
       R"(property "uris" validation failed: expected unique items but items 1 and 2 are equal)"},
      {R"({"uris": ["/a", 2], "upstream_id": 1})",
       R"(property "uris" validation failed: failed to validate item 2: wrong type: expected string, got number)"},
      {R"({"uri": "/a", "upstream_id": 1, "name": ""})",
       R"(property "name" validation failed: string too short)"},
      {R"({"uri": "/a", "upstream_id": 1, "desc": 5})",
       R"(property "desc" validation failed: wrong type: expected string, got number)"},
      {R"({"uri": "/a", "upstream_id": 1, "labels": {"k": 1}})",
       R"(property "labels" validation failed: failed to validate k (matching ".*"): wrong type: expected string, got number)"},
      {R"({"uri": "/a", "upstream_id": 1, "labels": {"k": "a b"}})",
       R"(property "labels" validation failed: failed to validate k)"},
      {R"({"uri": "/a", "upstream_id": 1, "host": "a b"})",
       R"(property "host" validation failed: failed to match pattern)"},
      {R"({"uri": "/a", "upstream_id": 1, "hosts": "a.com"})",
       R"(property "hosts" validation failed: wrong type: expected array, got string)"},
      {R"({"uri": "/a", "upstream_id": 1, "remote_addrs": [1]})",
       R"(property "remote_addrs" validation failed: failed to validate item 1: wrong type: expected string)"},
      {R"({"uri": "/a", "upstream_id": 1, "methods": ["GET", "get"]})",
       R"(property "methods" validation failed: failed to validate item 2: matches none of the enum values)"},
      {R"({"uri": "/a", "upstream_id": 1, "methods": ["GET", "GET"]})",
       R"(property "methods" validation failed: expected unique items)"},
      {R"({"uri": "/a", "upstream_id": 1, "priority": "1"})",
       R"(property "priority" validation failed: wrong type: expected integer, got string)"},
      {R"({"uri": "/a", "upstream_id": 1, "priority": 1.5})",
       R"(property "priority" validation failed: wrong type: expected integer, got number)"},
      {R"({"uri": "/a", "upstream_id": 1, "vars": {}})",
       R"(property "vars" validation failed: wrong type: expected array, got table)"},
      {R"({"uri": "/a", "plugins": []})",
       R"(property "plugins" validation failed: wrong type: expected object, got table)"},
      {R"({"uri": "/a", "upstream_id": 1, "enable_websocket": "yes"})",
       R"(property "enable_websocket" validation failed: wrong type: expected boolean, got string)"},
      {R"({"uri": "/a", "upstream_id": 1, "status": 2})",
       R"(property "status" validation failed: matches none of the enum values)"},
      {R"({"uri": "/a", "upstream_id": 1, "create_time": "now"})",
       R"(property "create_time" validation failed: wrong type: expected integer)"},
  });
}

TEST(DecodeRoute, Ids) {
  run_cases({
      {R"({"id": "a-b_c.1", "uri": "/a", "upstream_id": 1})", nullptr},
      {R"({"id": 0, "uri": "/a", "upstream_id": 1})",
       R"(property "id" validation failed: object matches none of the required)"},
      {R"({"id": "a/b", "uri": "/a", "upstream_id": 1})", R"(property "id" validation failed)"},
      {R"({"id": "", "uri": "/a", "upstream_id": 1})", R"(property "id" validation failed)"},
      {R"({"id": true, "uri": "/a", "upstream_id": 1})", R"(property "id" validation failed)"},
      {R"({"uri": "/a", "upstream_id": -1})", R"(property "upstream_id" validation failed)"},
      {R"({"uri": "/a", "service_id": "x y"})", R"(property "service_id" validation failed)"},
      {R"({"uri": "/a", "plugin_config_id": 1.5})",
       R"(property "plugin_config_id" validation failed)"},
  });
}

TEST(DecodeRoute, Timeout) {
  run_cases({
      {R"({"uri": "/a", "upstream_id": 1, "timeout": {"connect": 0, "send": 1, "read": 1}})",
       R"(property "timeout" validation failed: property "connect" validation failed: expected 0 to be greater than 0)"},
      {R"({"uri": "/a", "upstream_id": 1, "timeout": {"connect": 1, "send": 1}})",
       R"(property "timeout" validation failed: property "read" is required)"},
      {R"({"uri": "/a", "upstream_id": 1, "timeout": {"connect": "1", "send": 1, "read": 1}})",
       R"(property "timeout" validation failed: property "connect" validation failed: wrong type: expected number, got string)"},
      {R"({"uri": "/a", "upstream_id": 1, "timeout": 5})",
       R"(property "timeout" validation failed: wrong type: expected object, got number)"},
  });
}

TEST(DecodeRoute, ShapeRules) {
  run_cases({
      {R"({"upstream_id": 1})", "value should match only one schema, but matches none"},
      {R"({"uri": "/a", "uris": ["/b"], "upstream_id": 1})",
       "value should match only one schema, but matches both schemas 1 and 2"},
      {R"({"uri": "/a", "host": "a.com", "hosts": ["b.com"], "upstream_id": 1})",
       "value should match only one schema, but matches both schemas 1 and 2 (host and hosts"},
      {R"({"uri": "/a", "remote_addr": "1.1.1.1", "remote_addrs": ["2.2.2.2"], "upstream_id": 1})",
       "value should match only one schema, but matches both schemas 1 and 2 (remote_addr and"},
      {R"({"uri": "/a"})",
       "route needs at least one of plugins, upstream, upstream_id, service_id, plugin_config_id"},
      {R"({"uri": "/a", "name": "n"})", "route needs at least one of"},
  });
}

TEST(DecodeRoute, NestedUpstreamErrorsNameBothProperties) {
  run_cases({
      {R"({"uri": "/a", "upstream": {"nodes": {"127.0.0.1:80": -1}}})",
       R"(property "upstream" validation failed: property "nodes" validation failed: object matches none of the required (failed to validate 127.0.0.1:80 (matching ".*"): expected -1 to be at least 0)"},
      {R"({"uri": "/a", "upstream": {"type": "random", "nodes": {}}})",
       R"(property "upstream" validation failed: property "type" validation failed: matches none of the enum values)"},
      {R"({"uri": "/a", "upstream": {}})",
       R"(property "upstream" validation failed: value should match only one schema, but matches none)"},
  });
}

TEST(DecodeRoute, FoldsSingularFormsIntoLists) {
  auto r = decode_route(Json::parse(R"({"id": 7, "uri": "/a", "host": "A.com",
      "remote_addr": "10.0.0.1", "upstream_id": "u1", "status": 0, "priority": 5})"));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->id, "7");
  EXPECT_EQ(r->uris, std::vector<std::string>{"/a"});
  EXPECT_EQ(r->hosts, std::vector<std::string>{"A.com"});
  EXPECT_EQ(r->remote_addrs, std::vector<std::string>{"10.0.0.1"});
  EXPECT_EQ(r->upstream_id, "u1");
  EXPECT_EQ(r->status, 0);
  EXPECT_EQ(r->priority, 5);
  EXPECT_TRUE(r->plugins.is_null());
  EXPECT_TRUE(r->vars.is_null());
  EXPECT_FALSE(r->upstream.has_value());
  EXPECT_FALSE(r->timeout.has_value());
}

// A plugin that is not enabled is unknown, and the plugin errors have no `invalid
// configuration: ` prefix, as in APISIX. Schema errors come first.
TEST(DecodeRoute, ChecksPluginsAgainstTheRegistry) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"uri": "/a", "plugins": {"openid-connect": {}}})", "unknown plugin [openid-connect]"},
      {R"({"uri": "/a", "plugins": {"limit-count": {"count": 2}}})",
       R"(failed to check the configuration of plugin limit-count err: property "time_window" is required)"},
      {R"({"uri": "/a", "plugins": {"limit-count": {"count": 2, "time_window": 0}}})",
       R"(failed to check the configuration of plugin limit-count err: property "time_window" validation failed: expected 0 to be greater than 0)"},
      {R"({"uri": "/a", "plugins": {"prometheus": {}, "limit-count": {"count": 2,
           "time_window": 1, "policy": "redis"}}})",
       R"(failed to check the configuration of plugin limit-count err: then clause did not match (property "redis_host" is required))"},
      {R"({"uri": "/a", "plugins": {"prometheus": {"prefer_name": []}}})",
       R"(failed to check the configuration of plugin prometheus err: property "prefer_name" validation failed: wrong type: expected boolean, got table)"},
      {R"({"uri": "/a", "upstream_id": 1, "plugins": {"b": {}, "a": {}}})", "unknown plugin [a]"},
      {R"({"uri": "/a", "plugins": {"x": 1}})", "invalid plugin conf 1 for plugin [x]"},
      {R"({"uri": "/a", "plugins": {"x": {"_meta": {"disable": true}}}})", "unknown plugin [x]"},
      {R"({"uri": 1, "plugins": {"x": {}}})",
       R"(invalid configuration: property "uri" validation failed: wrong type: expected string, got number)"},
      {R"({"uri": "/a", "plugins": {"x": {}}, "foo": 1})",
       "invalid configuration: additional properties forbidden, found foo"},
  };
  for (const auto& [json, error] : cases) {
    SCOPED_TRACE(json);
    auto r = decode_route(Json::parse(json));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), error);
  }
  auto ok = decode_route(Json::parse(R"({"uri": "/a", "plugins": {
      "limit-count": {"count": 2, "time_window": 60, "_meta": {"priority": 1}},
      "prometheus": {"prefer_name": true}}})"));
  ASSERT_TRUE(ok.is_ok()) << ok.status().message();
  EXPECT_EQ(ok->plugins["limit-count"]["_meta"]["priority"], 1);
}

TEST(DecodeRoute, KeepsPluginsVarsAndTimeout) {
  auto r = decode_route(Json::parse(R"({"uris": ["/a", "/b"], "methods": ["GET"],
      "plugins": {}, "vars": [["arg_x", "==", "1"]],
      "timeout": {"connect": 1, "send": 2, "read": 3.5},
      "upstream": {"nodes": [{"host": "10.0.0.1", "weight": 2}]}})"));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->uris.size(), 2u);
  EXPECT_EQ(r->methods, std::vector<std::string>{"GET"});
  EXPECT_TRUE(r->plugins.is_object());
  EXPECT_TRUE(r->plugins.empty());
  EXPECT_EQ(r->vars[0][0], "arg_x");
  ASSERT_TRUE(r->timeout.has_value());
  EXPECT_EQ(r->timeout->read, 3.5);
  ASSERT_TRUE(r->upstream.has_value());
  EXPECT_EQ(r->upstream->nodes.at(0).weight, 2);
}

}  // namespace resources_route_test
}  // namespace sluice::config
