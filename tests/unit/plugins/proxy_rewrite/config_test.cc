// proxy-rewrite's conf: APISIX's schema and check_schema texts, table-driven, plus what Sluice
// refuses on top of them.

#include "plugins/proxy_rewrite/config.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/proxy_rewrite/proxy_rewrite.h"

namespace sluice::plugins::proxy_rewrite {
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

TEST(ProxyRewriteConfig, Info) {
  EXPECT_EQ(info().name, "proxy-rewrite");
  EXPECT_EQ(info().priority, 1008);
  EXPECT_FALSE(info().stream);
  Json schema = Json::parse(info().schema);
  EXPECT_EQ(schema["properties"]["uri"]["maxLength"], 4096);
  EXPECT_EQ(schema["properties"]["method"]["enum"].size(), 14u);
  EXPECT_EQ(schema["properties"]["headers"]["oneOf"].size(), 2u);
}

TEST(ProxyRewriteConfig, ValidConfs) {
  expect_cases({
      // jsonschema fills use_real_request_uri_unsafe's default before it counts properties:
      // APISIX takes an empty conf.
      {R"J({})J", ""},
      {R"J({"uri": "/test/home.html", "host": "iresty.com"})J", ""},
      {R"J({"uri": "/get?arg1=apisix&arg2=plugin"})J", ""},
      {R"J({"uri": "/$arg_name/${http_x_id}/${ route_id ?? none }"})J", ""},
      // The connection's variables (scheme, https, ssl_*) are read from it.
      {R"J({"uri": "/$scheme/$https", "headers": {"set": {"X-Dn": "$ssl_client_s_dn"}}})J", ""},
      {R"J({"method": "POST"})J", ""},
      {R"J({"method": "PROPFIND"})J", ""},
      {R"J({"regex_uri": ["^/test/(.*)/(.*)", "/$1-$2"]})J", ""},
      {R"J({"regex_uri": ["^/a/(.*)", "/${1}", "^/b", "/b$$"]})J", ""},
      {R"J({"host": "apisix.iresty.com:8080"})J", ""},
      {R"J({"headers": {"X-Api-Version": "v1", "X-Num": 2, "X-Empty": ""}})J", ""},
      {R"J({"headers": {"add": {"X-A": "$remote_addr"}, "set": {"X-B": "$1"},
                       "remove": ["User-Agent"]}})J",
       ""},
      // A flat header named like a verb is a flat header: its value is not an object.
      {R"J({"headers": {"set": "x"}})J", ""},
      {R"J({"use_real_request_uri_unsafe": true})J", ""},
      // APISIX 3.x ignores properties its schema does not name (2.x's scheme among them).
      {R"J({"uri": "/x", "scheme": "https", "enable_websocket": true})J", ""},
  });
}

TEST(ProxyRewriteConfig, SchemaErrors) {
  expect_cases({
      {R"J("x")J", "wrong type: expected object, got string"},
      {R"J({"uri": 1})J",
       R"J(property "uri" validation failed: wrong type: expected string, got number)J"},
      {R"J({"uri": ""})J",
       R"J(property "uri" validation failed: string too short, expected at least 1, got 0)J"},
      {R"J({"uri": "test"})J",
       R"J(property "uri" validation failed: failed to match pattern "^\\/.*" with "test")J"},
      {R"J({"uri": "a\"b"})J",
       R"J(property "uri" validation failed: failed to match pattern "^\\/.*" with "a\"b")J"},
      {R"J({"method": "GET1"})J",
       R"J(property "method" validation failed: matches none of the enum values)J"},
      {R"J({"method": "get"})J",
       R"J(property "method" validation failed: matches none of the enum values)J"},
      {R"J({"method": 1})J",
       R"J(property "method" validation failed: wrong type: expected string, got number)J"},
      {R"J({"regex_uri": "^/a"})J",
       R"J(property "regex_uri" validation failed: wrong type: expected array, got string)J"},
      {R"J({"regex_uri": ["^/a"]})J",
       R"J(property "regex_uri" validation failed: expect array to have at least 2 items)J"},
      {R"J({"regex_uri": ["^/a", 1]})J",
       R"J(property "regex_uri" validation failed: failed to validate item 2: wrong type: expected string, got number)J"},
      {R"J({"host": "a b"})J",
       R"J(property "host" validation failed: failed to match pattern "^[0-9a-zA-Z-.]+(:\\d{1,5})?$" with "a b")J"},
      {R"J({"host": "a.com:123456"})J",
       R"J(property "host" validation failed: failed to match pattern "^[0-9a-zA-Z-.]+(:\\d{1,5})?$" with "a.com:123456")J"},
      {R"J({"host": "a.com:"})J",
       R"J(property "host" validation failed: failed to match pattern "^[0-9a-zA-Z-.]+(:\\d{1,5})?$" with "a.com:")J"},
      {R"J({"use_real_request_uri_unsafe": "yes"})J",
       R"J(property "use_real_request_uri_unsafe" validation failed: wrong type: expected boolean, got string)J"},
  });
}

TEST(ProxyRewriteConfig, HeadersSchema) {
  const char* none =
      R"J(property "headers" validation failed: value should match only one schema, but matches none)J";
  expect_cases({
      {R"J({"headers": {}})J", none},
      {R"J({"headers": "x"})J", none},
      {R"J({"headers": ["X-A"]})J", none},
      {R"J({"headers": {"X-A": {"b": 1}}})J", none},
      {R"J({"headers": {"X-A": true}})J", none},
      {R"J({"headers": {"add": {}}})J", none},
      {R"J({"headers": {"add": {"X-A": true}}})J", none},
      {R"J({"headers": {"remove": []}})J", none},
      {R"J({"headers": {"remove": ["a:b"]}})J", none},
      {R"J({"headers": {"remove": [""]}})J", none},
      // A verb beside a flat field matches neither form.
      {R"J({"headers": {"set": {"X-A": "1"}, "X-B": "2"}})J", none},
  });
}

TEST(ProxyRewriteConfig, CheckSchemaErrors) {
  expect_cases({
      {R"J({"regex_uri": ["^/a", "/b", "^/c"]})J",
       "The length of regex_uri should be an even number"},
      {R"J({"regex_uri": ["^/(a", "/$1"]})J",
       R"J(invalid regex_uri(^/(a, /$1): pcre2_compile() failed: missing closing parenthesis in "^/(a")J"},
      {R"J({"regex_uri": ["^/a", "/b", "a{2,1}", "/c"]})J",
       R"J(invalid regex_uri(a{2,1}, /c): pcre2_compile() failed: numbers out of order in {} quantifier in "a{2,1}" at "}")J"},
      {R"J({"regex_uri": ["^/a", "/$x"]})J",
       "invalid regex_uri(^/a, /$x): failed to compile the replacement template"},
      {R"J({"regex_uri": ["^/a", "/$"]})J",
       "invalid regex_uri(^/a, /$): failed to compile the replacement template"},
      {R"J({"regex_uri": ["^/a", "/${1"]})J",
       "invalid regex_uri(^/a, /${1): failed to compile the replacement template"},
      {R"J({"regex_uri": ["^/a", "/${}"]})J",
       "invalid regex_uri(^/a, /${}): failed to compile the replacement template"},
      {R"J({"regex_uri": ["^/a", "/$arg_x"]})J",
       "invalid regex_uri(^/a, /$arg_x): failed to compile the replacement template"},
      // The flat form's own checks.
      {R"J({"headers": {"": "x"}})J", "invalid field length in header"},
      {R"J({"headers": {"X A": "x"}})J", "invalid field character in header"},
      {R"J({"headers": {"X-Ä": "x"}})J", "invalid field character in header"},
      {R"J({"headers": {"a:b": "x"}})J", "invalid field character in header"},
      {R"J({"headers": {"a:b": {}}})J", "invalid type as header value"},
      {R"J({"headers": {"X-A": "a\nb"}})J", "invalid value character in header"},
      {R"J({"headers": {"X-A": "a\tb"}})J", "invalid value character in header"},
      {R"J({"headers": {"X-A": "é"}})J", "invalid value character in header"},
      // The regex is checked before the headers, as check_schema does.
      {R"J({"regex_uri": ["(", "/"], "headers": {"": "x"}})J",
       R"J(invalid regex_uri((, /): pcre2_compile() failed: missing closing parenthesis in "(")J"},
  });
}

TEST(ProxyRewriteConfig, SluiceRefusals) {
  expect_cases({
      {R"J({"headers": {"Host": "a.com"}})J",
       R"J(headers: "Host" cannot be rewritten through headers; use the "host" field of proxy-rewrite)J"},
      {R"J({"headers": {"set": {"host": "a.com"}}})J",
       R"J(headers.set: "Host" cannot be rewritten through headers; use the "host" field of proxy-rewrite)J"},
      {R"J({"headers": {"add": {"Content-Length": "1"}}})J",
       R"J(headers.add: "Content-Length" is written by the gateway itself (framing or hop-by-hop); Sluice does not let a plugin rewrite it)J"},
      {R"J({"headers": {"remove": ["Transfer-Encoding"]}})J",
       R"J(headers.remove: "Transfer-Encoding" is written by the gateway itself (framing or hop-by-hop); Sluice does not let a plugin rewrite it)J"},
      {R"J({"headers": {"Connection": "close"}})J",
       R"J(headers: "Connection" is written by the gateway itself (framing or hop-by-hop); Sluice does not let a plugin rewrite it)J"},
      // The 3.x form skips APISIX's character checks; Sluice still refuses what cannot be sent.
      {R"J({"headers": {"set": {"X A": "1"}}})J",
       R"J(headers.set: invalid field character in header "X A")J"},
      {R"J({"headers": {"add": {"a:b": "1"}}})J",
       R"J(headers.add: invalid field character in header "a:b")J"},
      {R"J({"headers": {"add": {"a:b": [1]}}})J",
       R"J(headers.add: invalid field character in header "a:b")J"},
      {R"J({"headers": {"remove": ["X A"]}})J",
       R"J(headers.remove: invalid field character in header "X A")J"},
      {R"J({"headers": {"set": {"X-A": "a\r\nb"}}})J",
       R"J(headers.set: invalid value character in header "X-A")J"},
      {R"J({"upgrade": "websocket"})J",
       R"J(property "upgrade" is not supported by Sluice: the gateway writes Upgrade and Connection itself)J"},
      {R"J({"connection": "upgrade"})J",
       R"J(property "connection" is not supported by Sluice: the gateway writes Upgrade and Connection itself)J"},
      {R"J({"uri": "/$server_addr/x"})J",
       R"J(uri: variable "$server_addr" is not supported by Sluice)J"},
      {R"J({"uri": "/${ remote_port ?? 0 }"})J",
       R"J(uri: variable "$remote_port" is not supported by Sluice)J"},
      // The ssl_* variables the connection does not give (router::Var reads the others).
      {R"J({"headers": {"set": {"X-A": "$ssl_client_cert"}}})J",
       R"J(headers.set["X-A"]: variable "$ssl_client_cert" is not supported by Sluice)J"},
  });
}

TEST(ProxyRewriteConfig, ParsedShape) {
  auto c = parse(Json::parse(R"J({"uri": "/x", "method": "PUT", "host": "h",
      "regex_uri": ["^/a", "/b", "^/c", "/d"],
      "headers": {"add": {"A": "1"}, "set": {"S": 2.5, "T": 3}, "remove": ["R"]},
      "use_real_request_uri_unsafe": true})J"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_TRUE(c->has_uri);
  EXPECT_EQ(c->method, "PUT");
  EXPECT_EQ(c->host, "h");
  ASSERT_EQ(c->regex_uri.size(), 2u);
  EXPECT_EQ(c->regex_uri[1].pattern(), "^/c");
  ASSERT_EQ(c->headers.add.size(), 1u);
  ASSERT_EQ(c->headers.set.size(), 2u);
  EXPECT_EQ(c->headers.set[0].name, "S");
  EXPECT_EQ(c->headers.remove, std::vector<std::string>{"R"});
  EXPECT_TRUE(c->use_real_request_uri_unsafe);
  // The flat form sets every field.
  auto flat = parse(Json::parse(R"J({"headers": {"X-A": "1", "X-B": "2"}})J"));
  ASSERT_TRUE(flat.is_ok());
  EXPECT_TRUE(flat->headers.add.empty());
  EXPECT_EQ(flat->headers.set.size(), 2u);
}

TEST(ProxyRewriteConfig, Metadata) {
  EXPECT_TRUE(check(Json::object(), plugin::PluginUse::kMetadata).is_ok());
  EXPECT_EQ(check(Json{{"a", 1}}, plugin::PluginUse::kMetadata).message(),
            "proxy-rewrite has no plugin metadata");
}

}  // namespace
}  // namespace sluice::plugins::proxy_rewrite
