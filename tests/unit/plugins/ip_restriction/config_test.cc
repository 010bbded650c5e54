// ip-restriction's conf: APISIX's schema and check_schema texts, table-driven.

#include "plugins/ip_restriction/config.h"

#include <gtest/gtest.h>

#include "plugins/ip_restriction/ip_restriction.h"

namespace sluice::plugins::ip_restriction {
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

TEST(IpRestrictionConfig, Info) {
  EXPECT_EQ(info().name, "ip-restriction");
  EXPECT_EQ(info().priority, 3000);
  EXPECT_FALSE(info().stream);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["message"]["default"], "Your IP address is not allowed");
  EXPECT_EQ(schema["properties"]["message"]["maxLength"], 1024);
  EXPECT_EQ(schema["properties"]["whitelist"]["items"]["anyOf"].size(), 4u);
  EXPECT_EQ(schema["properties"]["response_code"]["default"], 403);
  EXPECT_EQ(schema["oneOf"].size(), 2u);
}

TEST(IpRestrictionConfig, ValidConfs) {
  expect_cases({
      {R"({"whitelist": ["127.0.0.1"]})", ""},
      {R"({"whitelist": ["127.0.0.0/24", "113.74.26.106/24", "10.0.0.0/8"]})", ""},
      {R"({"blacklist": ["::1", "fe80::/32", "2001:db8::1/128", "0.0.0.0/0"]})", ""},
      {R"({"blacklist": ["::ffff:1.2.3.4"]})", ""},
      {R"({"whitelist": ["1.1.1.1"], "message": "Do you want to do something bad?"})", ""},
      {R"({"whitelist": ["1.1.1.1"], "response_code": 404})", ""},
      {R"({"whitelist": ["1.1.1.1", "1.1.1.1"]})", ""},  // no uniqueItems in APISIX's schema
  });
}

TEST(IpRestrictionConfig, SchemaErrors) {
  expect_cases({
      {R"({})", "value should match only one schema, but matches none"},
      {R"({"message": "x"})", "value should match only one schema, but matches none"},
      {R"({"whitelist": ["1.1.1.1"], "blacklist": ["2.2.2.2"]})",
       "value should match only one schema, but matches both schemas 1 and 2"},
      {R"({"whitelist": []})",
       R"(property "whitelist" validation failed: expect array to have at least 1 items)"},
      {R"({"whitelist": "127.0.0.1"})",
       R"(property "whitelist" validation failed: wrong type: expected array, got string)"},
      {R"({"whitelist": ["127.0.0.1", "www.example.com"]})",
       R"(property "whitelist" validation failed: failed to validate item 2: object matches )"
       R"(none of the required)"},
      {R"({"blacklist": [1]})",
       R"(property "blacklist" validation failed: failed to validate item 1: object matches )"
       R"(none of the required)"},
      {R"({"blacklist": ["10.0.0.0/33"]})",
       R"(property "blacklist" validation failed: failed to validate item 1: object matches )"
       R"(none of the required)"},
      {R"({"blacklist": ["256.0.0.1"]})",
       R"(property "blacklist" validation failed: failed to validate item 1: object matches )"
       R"(none of the required)"},
      {R"({"whitelist": ["1.1.1.1"], "message": ""})",
       R"(property "message" validation failed: string too short, expected at least 1, got 0)"},
      {R"({"whitelist": ["1.1.1.1"], "message": 1})",
       R"(property "message" validation failed: wrong type: expected string, got number)"},
      {R"({"whitelist": ["1.1.1.1"], "response_code": 500})",
       R"(property "response_code" validation failed: expected 500 to be at most 404)"},
      {R"({"whitelist": ["1.1.1.1"], "response_code": 401})",
       R"(property "response_code" validation failed: expected 401 to be at least 403)"},
      {R"(["1.1.1.1"])", "wrong type: expected object, got table"},
  });
  std::string long_message(1025, 'a');
  Json conf = {{"whitelist", {"1.1.1.1"}}, {"message", long_message}};
  EXPECT_EQ(check(conf, plugin::PluginUse::kHttp).message(),
            R"(property "message" validation failed: string too long, expected at most 1024, )"
            R"(got 1025)");
}

// Entries ip_def's patterns let through but check_schema's address check refuses.
TEST(IpRestrictionConfig, CheckSchemaErrors) {
  expect_cases({
      {R"({"whitelist": ["::1/129"]})", "invalid ip address: ::1/129"},
      {R"({"blacklist": ["1.1.1.1", "fe80::1::2/64"]})", "invalid ip address: fe80::1::2/64"},
      {R"({"whitelist": [":::/8"]})", "invalid ip address: :::/8"},
  });
}

TEST(IpRestrictionConfig, IpDefBranches) {
  EXPECT_TRUE(matches_ip_def("1.2.3.4"));
  EXPECT_TRUE(matches_ip_def("1.2.3.4/0"));
  EXPECT_TRUE(matches_ip_def("1.2.3.4/32"));
  EXPECT_FALSE(matches_ip_def("1.2.3.4/33"));
  EXPECT_FALSE(matches_ip_def("1.2.3.04/8"));
  EXPECT_FALSE(matches_ip_def("1.2.3/8"));
  EXPECT_TRUE(matches_ip_def("::1"));
  EXPECT_TRUE(matches_ip_def("fe80::/10"));
  EXPECT_TRUE(matches_ip_def("::1/999"));  // IPv6/CIDR: any three digits
  EXPECT_FALSE(matches_ip_def("::1/1000"));
  EXPECT_FALSE(matches_ip_def("fe80::12345/64"));
  EXPECT_FALSE(matches_ip_def("::ffff:1.2.3.4/120"));
  EXPECT_FALSE(matches_ip_def("localhost"));
  EXPECT_FALSE(matches_ip_def(""));
}

TEST(IpRestrictionConfig, NoMetadata) {
  EXPECT_TRUE(check(Json::object(), plugin::PluginUse::kMetadata).is_ok());
  EXPECT_EQ(check(Json{{"a", 1}}, plugin::PluginUse::kMetadata).message(),
            "ip-restriction has no plugin metadata");
}

}  // namespace
}  // namespace sluice::plugins::ip_restriction
