// redirect's conf: APISIX's schema and check_schema texts, table-driven, plus what Sluice
// refuses on top of them.

#include "plugins/redirect/config.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/redirect/redirect.h"

namespace sluice::plugins::redirect {
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

TEST(RedirectConfig, Info) {
  EXPECT_EQ(info().name, "redirect");
  EXPECT_EQ(info().priority, 900);
  EXPECT_FALSE(info().stream);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["ret_code"]["default"], 302);
  EXPECT_EQ(schema["properties"]["uri"]["pattern"],
            R"((\\\$[0-9a-zA-Z_]+)|\$\{([0-9a-zA-Z_]+)\}|\$([0-9a-zA-Z_]+)|(\$|[^$\\]+))");
  EXPECT_EQ(schema["properties"]["regex_uri"]["maxItems"], 2);
  EXPECT_EQ(schema["oneOf"].size(), 3u);
}

TEST(RedirectConfig, ValidConfs) {
  expect_cases({
      {R"J({"ret_code": 302, "uri": "/foo"})J", ""},
      {R"J({"uri": "/foo"})J", ""},
      {R"J({"uri": "$uri/test/a${arg_name}c", "ret_code": 399})J", ""},
      {R"J({"uri": "\\$uri/foo$uri\\$uri/bar"})J", ""},
      {R"J({"uri": "$uri/$bad_var/bar"})J", ""},  // an unknown variable reads ""
      {R"J({"uri": "https://$host$request_uri", "ret_code": 301})J", ""},
      {R"J({"uri": "/$scheme/${https}"})J", ""},
      {R"J({"http_to_https": true})J", ""},
      // ret_code has no effect with http_to_https; APISIX takes it (its own tests do).
      {R"J({"http_to_https": true, "ret_code": 302})J", ""},
      {R"J({"http_to_https": true, "encode_uri": true})J", ""},
      // oneOf only asks for the property: `false` is a conf that redirects nothing.
      {R"J({"http_to_https": false})J", ""},
      {R"J({"http_to_https": false, "append_query_string": true})J", ""},
      {R"J({"regex_uri": ["^/test/(.*)", "http://test.com/${1}"], "ret_code": 301,
            "encode_uri": true})J",
       ""},
      {R"J({"uri": "$uri?type=string", "ret_code": 302, "append_query_string": true})J", ""},
      // APISIX's schema names no other property and refuses none.
      {R"J({"uri": "/x", "ret_port": 8443})J", ""},
  });
}

TEST(RedirectConfig, SchemaErrors) {
  expect_cases({
      {R"J("x")J", "wrong type: expected object, got string"},
      {R"J({})J", "value should match only one schema, but matches none"},
      {R"J({"ret_code": 301})J", "value should match only one schema, but matches none"},
      {R"J({"http_to_https": true, "uri": "/hello"})J",
       "value should match only one schema, but matches both schemas 1 and 3"},
      {R"J({"uri": "/a", "regex_uri": ["^/a", "/b"]})J",
       "value should match only one schema, but matches both schemas 1 and 2"},
      {R"J({"regex_uri": ["^/a", "/b"], "http_to_https": false})J",
       "value should match only one schema, but matches both schemas 2 and 3"},
      {R"J({"uri": "/a", "regex_uri": ["^/a", "/b"], "http_to_https": true})J",
       "value should match only one schema, but matches both schemas 1 and 2"},
      {R"J({"ret_code": 199, "uri": "/a"})J",
       R"J(property "ret_code" validation failed: expected 199 to be at least 200)J"},
      {R"J({"ret_code": "301", "uri": "/a"})J",
       R"J(property "ret_code" validation failed: wrong type: expected integer, got string)J"},
      {R"J({"ret_code": 301.5, "uri": "/a"})J",
       R"J(property "ret_code" validation failed: wrong type: expected integer, got number)J"},
      {R"J({"uri": "/"})J",
       R"J(property "uri" validation failed: string too short, expected at least 2, got 1)J"},
      {R"J({"uri": 1})J",
       R"J(property "uri" validation failed: wrong type: expected string, got number)J"},
      // Only a text of backslashes escapes every alternative of APISIX's pattern.
      {R"J({"uri": "\\\\"})J",
       R"J(property "uri" validation failed: failed to match pattern "(\\\\\\$[0-9a-zA-Z_]+)|\\$\\{([0-9a-zA-Z_]+)\\}|\\$([0-9a-zA-Z_]+)|(\\$|[^$\\\\]+)" with "\\\\")J"},
      {R"J({"regex_uri": ["^/a"]})J",
       R"J(property "regex_uri" validation failed: expect array to have at least 2 items)J"},
      {R"J({"regex_uri": ["^/a", "/b", "^/c"]})J",
       R"J(property "regex_uri" validation failed: expect array to have at most 2 items)J"},
      {R"J({"regex_uri": ["^/a", 1]})J",
       R"J(property "regex_uri" validation failed: failed to validate item 2: wrong type: expected string, got number)J"},
      {R"J({"regex_uri": "^/a"})J",
       R"J(property "regex_uri" validation failed: wrong type: expected array, got string)J"},
      {R"J({"http_to_https": "yes"})J",
       R"J(property "http_to_https" validation failed: wrong type: expected boolean, got string)J"},
      {R"J({"uri": "/a", "encode_uri": 1})J",
       R"J(property "encode_uri" validation failed: wrong type: expected boolean, got number)J"},
      {R"J({"uri": "/a", "append_query_string": "true"})J",
       R"J(property "append_query_string" validation failed: wrong type: expected boolean, got string)J"},
  });
}

TEST(RedirectConfig, CheckSchemaErrors) {
  expect_cases({
      {R"J({"regex_uri": ["^/(a", "/$1"]})J",
       R"J(invalid regex_uri (^/(a, /$1), err:pcre2_compile() failed: missing closing parenthesis in "^/(a")J"},
      {R"J({"regex_uri": ["^/a", "/$x"]})J",
       R"J(invalid regex_uri (^/a, /$x), err:failed to compile the replacement template)J"},
      {R"J({"http_to_https": true, "append_query_string": true})J",
       "only one of `http_to_https` and `append_query_string` can be configured."},
  });
}

TEST(RedirectConfig, SluiceRefusals) {
  expect_cases({
      // A status line has three digits.
      {R"J({"ret_code": 1000, "uri": "/a"})J",
       R"J(property "ret_code" validation failed: expected 1000 to be at most 999)J"},
      // Variables nginx has but Sluice cannot read are refused, not sent empty.
      {R"J({"uri": "/$server_addr/x"})J",
       R"J(uri: variable "$server_addr" is not supported by Sluice)J"},
      {R"J({"uri": "/${post_arg_name}"})J",
       R"J(uri: variable "$post_arg_name" is not supported by Sluice)J"},
      {R"J({"uri": "https://$ssl_client_cert"})J",
       R"J(uri: variable "$ssl_client_cert" is not supported by Sluice)J"},
  });
}

TEST(RedirectConfig, Metadata) {
  EXPECT_TRUE(check(Json::object(), plugin::PluginUse::kMetadata).is_ok());
  EXPECT_EQ(check(Json::parse(R"({"a": 1})"), plugin::PluginUse::kMetadata).message(),
            "redirect has no plugin metadata");
}

TEST(RedirectConfig, ParsedShape) {
  auto c = parse(Json::parse(R"J({"regex_uri": ["^/a/(.*)", "/b/$1"], "ret_code": 307,
                                  "encode_uri": true, "append_query_string": true})J"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->ret_code, 307);
  ASSERT_TRUE(c->regex_uri.has_value());
  EXPECT_EQ(c->regex_uri->pattern(), "^/a/(.*)");
  EXPECT_FALSE(c->has_uri);
  EXPECT_FALSE(c->has_http_to_https);
  EXPECT_TRUE(c->encode_uri);
  EXPECT_TRUE(c->append_query_string);
  auto d = parse(Json::parse(R"J({"http_to_https": true})J"));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->ret_code, 302);
  EXPECT_TRUE(d->http_to_https);
  EXPECT_FALSE(d->encode_uri);
}

}  // namespace
}  // namespace sluice::plugins::redirect
