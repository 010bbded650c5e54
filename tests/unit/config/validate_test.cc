#include "config/validate.h"

#include <gtest/gtest.h>

namespace sluice::config {
namespace validate_test {

struct Case {
  const char* kind;
  const char* id;
  const char* json;
  const char* error;  // exact; nullptr = valid
};

// Each kind reaches its own decoder: a minimal valid body passes, and a body valid for another
// kind fails with this kind's error.
TEST(ValidateResource, DispatchesOnKind) {
  const Case cases[] = {
      {"routes", "", R"({"uri": "/a", "upstream_id": 1})", nullptr},
      {"routes", "", R"({"plugins": {}})",
       "invalid configuration: value should match only one schema, but matches none (a route "
       "needs uri or uris)"},
      {"services", "", R"({})", nullptr},
      {"services", "", R"({"uri": "/a"})",
       "invalid configuration: additional properties forbidden, found uri"},
      {"upstreams", "", R"({"nodes": {"127.0.0.1:80": 1}})", nullptr},
      {"upstreams", "", R"({})",
       "invalid configuration: value should match only one schema, but matches none (an upstream "
       "needs nodes)"},
      {"consumers", "", R"({"username": "jack"})", nullptr},
      {"consumers", "", R"({"plugins": {}})",
       R"(invalid configuration: property "username" is required)"},
      {"ssls", "", R"({"sni": "a.com"})",
       "invalid configuration: value should match only one schema, but matches none (a server "
       "certificate needs cert, key, and sni or snis)"},
      {"global_rules", "", R"({"plugins": {}})", nullptr},
      {"global_rules", "", R"({"username": "jack"})",
       "invalid configuration: additional properties forbidden, found username"},
      {"plugin_configs", "", R"({"plugins": {}})", nullptr},
      {"plugin_configs", "", R"({})", R"(invalid configuration: property "plugins" is required)"},
      {"consumer_groups", "", R"({"plugins": {}})", nullptr},
      {"consumer_groups", "", R"({"content": "x"})",
       "invalid configuration: additional properties forbidden, found content"},
      {"stream_routes", "", R"({"server_port": 9100})", nullptr},
      {"stream_routes", "", R"({"uri": "/a"})",
       "invalid configuration: additional properties forbidden, found uri"},
      {"protos", "", R"({"content": "x"})", nullptr},
      {"protos", "", R"({"plugins": {}})",
       "invalid configuration: additional properties forbidden, found plugins"},
      {"plugin_metadata", "prometheus", R"({})", nullptr},
      {"plugin_metadata", "openid-connect", R"({})", "unknown plugin [openid-connect]"},
      {"secrets", "vault/1", R"({"uri": "http://v", "prefix": "p", "token": "t"})", nullptr},
      {"secrets", "aws/1", R"({"uri": "http://v", "prefix": "p", "token": "t"})",
       "invalid configuration: additional properties forbidden, found prefix"},
      {"route", "", R"({})", "Unsupported resource type: route"},
      {"", "", R"({})", "Unsupported resource type: "},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.kind) + " " + c.json);
    common::Status s = validate_resource(c.kind, c.id, Json::parse(c.json));
    if (c.error == nullptr) {
      EXPECT_TRUE(s.is_ok()) << s.message();
    } else {
      EXPECT_EQ(s.message(), c.error);
    }
  }
}

TEST(ValidateResource, TwoArgumentFormTakesTheIdFromTheBody) {
  EXPECT_TRUE(validate_resource("routes", Json::parse(R"({"uri": "/", "upstream_id": 1})")));
  EXPECT_TRUE(validate_resource(
      "secrets",
      Json::parse(R"({"id": "vault/1", "uri": "http://v", "prefix": "p", "token": "t"})")));
  EXPECT_EQ(validate_resource("secrets", Json::parse(R"({"uri": "http://v"})")).message(),
            "missing secret type");
  EXPECT_EQ(
      validate_resource("plugin_metadata", Json::parse(R"({"id": "no-such-plugin"})")).message(),
      "unknown plugin [no-such-plugin]");
  EXPECT_EQ(validate_resource("plugin_metadata", Json::object()).message(), "missing plugin name");
}

}  // namespace validate_test
}  // namespace sluice::config
