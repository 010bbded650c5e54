// ua-restriction's conf: APISIX 3.x's schema and check_schema texts, table-driven.

#include "plugins/ua_restriction/config.h"

#include <gtest/gtest.h>

#include "plugins/ua_restriction/ua_restriction.h"

namespace sluice::plugins::ua_restriction {
namespace {

using plugin::Json;

struct Case {
  const char* conf;
  const char* error;  // "" when the conf is valid
};

void expect_cases(std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    common::Status s = check(Json::parse(c.conf), plugin::PluginUse::kHttp);
    EXPECT_EQ(s.message(), c.error) << c.conf;
  }
}

TEST(UaRestrictionConfig, Info) {
  EXPECT_EQ(info().name, "ua-restriction");
  EXPECT_EQ(info().priority, 2999);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["message"]["default"], "Not allowed");
  EXPECT_EQ(schema["properties"]["bypass_missing"]["default"], false);
  EXPECT_EQ(schema["oneOf"].size(), 2u);
}

TEST(UaRestrictionConfig, ValidConfs) {
  expect_cases({
      {R"J({"allowlist": ["my-bot1", "(Baiduspider)/(\\d+)\\.(\\d+)"]})J", ""},
      {R"J({"denylist": ["my-bot2"], "bypass_missing": true, "message": "go away"})J", ""},
      {R"J({"denylist": ["a", "a"]})J", ""},
  });
}

TEST(UaRestrictionConfig, Errors) {
  expect_cases({
      {R"J({})J", "value should match only one schema, but matches none"},
      {R"J({"bypass_missing": true})J", "value should match only one schema, but matches none"},
      {R"J({"allowlist": ["a"], "denylist": ["b"]})J",
       "value should match only one schema, but matches both schemas 1 and 2"},
      {R"J({"allowlist": []})J",
       R"J(property "allowlist" validation failed: expect array to have at least 1 items)J"},
      {R"J({"denylist": ["a", ""]})J",
       R"J(property "denylist" validation failed: failed to validate item 2: string too short, )J"
       R"J(expected at least 1, got 0)J"},
      {R"J({"denylist": [3]})J",
       R"J(property "denylist" validation failed: failed to validate item 1: wrong type: )J"
       R"J(expected string, got number)J"},
      {R"J({"denylist": ["a"], "bypass_missing": "yes"})J",
       R"J(property "bypass_missing" validation failed: wrong type: expected boolean, got string)J"},
      {R"J({"denylist": ["a"], "message": ""})J",
       R"J(property "message" validation failed: string too short, expected at least 1, got 0)J"},
      {R"J({"allowlist": ["ok", "(abc"]})J",
       R"J(pcre2_compile() failed: missing closing parenthesis in "(abc")J"},
  });
}

}  // namespace
}  // namespace sluice::plugins::ua_restriction
