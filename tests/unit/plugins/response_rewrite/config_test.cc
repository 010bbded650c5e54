// response-rewrite's conf check: APISIX's schema and check_schema texts, what Sluice refuses
// because it could not make it take effect, and what a checked conf is built into.

#include "plugins/response_rewrite/config.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::plugins::response_rewrite {
namespace {

using plugin::Json;

struct Case {
  const char* conf;
  const char* error;  // "" = accepted
};

const Case kCases[] = {
    // APISIX t/plugin/response-rewrite.t
    {R"({"body": "Hello world", "headers": {"X-Server-id": 3}})", ""},
    {R"({"status_code": 599})",
     R"(property "status_code" validation failed: expected 599 to be at most 598)"},
    {R"({"status_code": 199})",
     R"(property "status_code" validation failed: expected 199 to be at least 200)"},
    {R"({"status_code": 200.5})",
     R"(property "status_code" validation failed: wrong type: expected integer, got number)"},
    {R"({"status_code": 598})", ""},
    {R"({"body": 2, "headers": {"X-Server-id": "3"}})",
     R"(property "body" validation failed: wrong type: expected string, got number)"},
    {R"({"status_code": 200, "headers": {"": 2}})", "invalid field length in header"},
    {R"({"status_code": 200, "headers": {"X-Name": {}}})", "invalid type as header value"},
    {R"({"status_code": 200, "headers": {"X-Name": true}})", "invalid type as header value"},
    {R"({"body": "1", "body_base64": true})", "invalid base64 content"},
    {R"({"body": "", "body_base64": true})", "invalid base64 content"},
    {R"({"body_base64": true})", "invalid base64 content"},
    {R"({"body": "SGVsbG8K", "body_base64": true})", ""},
    {R"({"body_base64": "yes"})",
     R"(property "body_base64" validation failed: wrong type: expected boolean, got string)"},
    // APISIX 2.x's schema forbade other fields (its TEST 16); 3.x's lets them pass.
    {R"({"body": "Hello world", "invalid_att": "invalid"})", ""},
    {R"({"vars": [["status", "==", 200]]})", ""},
    {R"({"vars": {"status": 200}})",
     R"(property "vars" validation failed: wrong type: expected array, got table)"},
    {R"({"vars": [["status", "=", 200]]})",
     R"(failed to validate the 'vars' expression: invalid operator '=' in ["status","=",200])"},
    {R"({})", ""},
    {R"("x")", "wrong type: expected object, got string"},
    // APISIX t/plugin/response-rewrite2.t: filters
    {R"({"filters": [{"regex": "l", "replace": "m"}]})", ""},
    {R"({"body": "test", "filters": [{"regex": "l", "replace": "m"}]})",
     "failed to validate dependent schema for body: value wasn't supposed to match schema"},
    {R"({"filters": []})",
     R"(property "filters" validation failed: expect array to have at least 1 items)"},
    {R"({"filters": {}})",
     R"(property "filters" validation failed: wrong type: expected array, got table)"},
    {R"({"filters": [{"regex": "l"}]})",
     R"(property "filters" validation failed: failed to validate item 1: property "replace" is required)"},
    {R"({"filters": [{"replace": "l"}]})",
     R"(property "filters" validation failed: failed to validate item 1: property "regex" is required)"},
    {R"({"filters": [{"regex": "", "replace": "m"}]})",
     R"(property "filters" validation failed: failed to validate item 1: property "regex" validation failed: string too short, expected at least 1, got 0)"},
    {R"({"filters": [{"regex": "l", "replace": "m", "scope": ""}]})",
     R"(property "filters" validation failed: failed to validate item 1: property "scope" validation failed: matches none of the enum values)"},
    {R"({"filters": [{"regex": "l", "replace": "m"}, "x"]})",
     R"(property "filters" validation failed: failed to validate item 2: wrong type: expected object, got string)"},
    {R"({"filters": [{"regex": "Hello", "scope": "global", "replace": "World", "options": "jo"}]})",
     ""},
    {R"({"filters": [{"regex": "hello", "replace": "HELLO", "options": "h"}]})",
     R"(regex "hello" validation failed: unknown flag "h" (flags "h"))"},
    {R"({"filters": [{"regex": "hello", "replace": "HELLO", "options": "jod"}]})",
     R"(regex "hello" validation failed: flag "d" (DFA matching) is not supported by Sluice)"},
    // APISIX accepts a regex PCRE cannot compile (re_match_compile returns, not throws).
    {R"({"filters": [{"regex": "(", "replace": "x"}]})",
     R"(regex "(" validation failed: missing closing parenthesis at offset 1)"},
    {R"({"filters": [{"regex": "a", "replace": "$x"}]})",
     R"(replace "$x" validation failed: a "$" must start $N, ${N} or $$)"},
    {R"({"filters": [{"regex": "a", "replace": "${1"}]})",
     R"(replace "${1" validation failed: the closing bracket of a ${N} is missing)"},
    {R"js({"filters": [{"regex": "(a)", "replace": "$1 ${1} $$ $0"}]})js", ""},
    // headers, 3.x form
    {R"({"headers": {"add": ["X-A: 1"], "set": {"X-B": "2", "X-N": 3}, "remove": ["X-C"]}})", ""},
    {R"({"headers": {"add": ["X-A"]}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": {"add": ["X-A: http://x/"]}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": {"add": []}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": {"set": {}}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": {"set": {"X-A": true}}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": {"remove": ["X-A:"]}})",
     R"(property "headers" validation failed: object matches none of the required)"},
    {R"({"headers": "X-A: 1"})",
     R"(property "headers" validation failed: object matches none of the required)"},
    // A string `add` is a flat header named "add", as APISIX reads it.
    {R"({"headers": {"add": "x"}})", ""},
    // The flat form's empty object passes the second branch and sets nothing.
    {R"({"headers": {}})", ""},
    // What Sluice refuses: it could not send it.
    {R"({"headers": {"X Y": "1"}})", R"(invalid header name "X Y")"},
    {R"({"headers": {"set": {"a:b": "1"}}})", R"(invalid header name "a:b")"},
    {R"({"headers": {"Content-Length": "1"}})",
     R"(header "Content-Length" cannot be changed: Sluice frames the response itself)"},
    {R"({"headers": {"remove": ["Transfer-Encoding"]}})",
     R"(header "Transfer-Encoding" cannot be changed: Sluice frames the response itself)"},
    {R"({"headers": {"add": [" X-A: 1"]}})", R"(headers.add: " X-A: 1" is not "name: value")"},
    {R"({"headers": {"add": ["X-A: 1:"]}})", R"(headers.add: "X-A: 1:" is not "name: value")"},
    {R"({"headers": {"X-A": "a\r\nX-B: b"}})",
     R"(the value of header "X-A" has a control character)"},
    {R"({"headers": {"X-A": "$request_time"}})",
     R"(header "X-A": variable $request_time is not supported by Sluice)"},
    {R"({"headers": {"set": {"X-A": "${nope ?? 1}"}}})",
     R"(header "X-A": variable $nope is not supported by Sluice)"},
    {R"({"headers": {"X-A": "$http_user_agent"}})",
     R"(header "X-A": variable $http_user_agent reads the request, which Sluice does not keep for the response phases)"},
    {R"({"headers": {"X-A": "$remote_addr $status $route_id ${balancer_ip ?? none} \\$x $"}})", ""},
    {R"({"vars": [["status", "==", 200], ["http_x", "==", "1"]]})",
     R"(vars: variable "http_x" reads the request, which Sluice does not keep for the response phases)"},
    {R"({"vars": [["upstream_http_content_type", "~~", "json"], ["remote_addr", "==", "1.1.1.1"]]})",
     ""},
};

TEST(ResponseRewriteConfig, Table) {
  for (const Case& c : kCases) {
    common::Status s = check(Json::parse(c.conf), plugin::PluginUse::kHttp);
    if (*c.error == '\0') {
      EXPECT_TRUE(s.is_ok()) << c.conf << ": " << s.message();
    } else {
      EXPECT_EQ(s.message(), c.error) << c.conf;
    }
  }
}

TEST(ResponseRewriteConfig, Built) {
  auto c = parse(Json::parse(R"({
    "status_code": 302,
    "body": "SGVsbG8K",
    "body_base64": true,
    "headers": {"add": ["X-A: 1", "X-A : two words"], "set": {"X-B": "b", "X-N": 3.5},
                "remove": ["X-C"], "X-Ignored": "x"},
    "vars": [["status", "==", 200]]
  })"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->status_code, 302);
  EXPECT_TRUE(c->has_body);
  EXPECT_EQ(c->body, "Hello\n");
  ASSERT_EQ(c->headers.add.size(), 2u);
  EXPECT_EQ(c->headers.add[1].name, "X-A");
  EXPECT_EQ(c->headers.add[1].value.text(), "two words");
  ASSERT_EQ(c->headers.set.size(), 2u);  // the flat key beside the 3.x ones is not read
  EXPECT_EQ(c->headers.set[1].name, "X-N");
  EXPECT_EQ(c->headers.set[1].value.text(), "3.5");
  EXPECT_EQ(c->headers.remove, std::vector<std::string>{"X-C"});
  EXPECT_FALSE(c->vars.empty());
  EXPECT_TRUE(c->filters.empty());

  auto flat = parse(Json::parse(R"({"headers": {"X-Server-id": 3, "Content-Type": ""}})"));
  ASSERT_TRUE(flat.is_ok());
  EXPECT_FALSE(flat->has_body);
  ASSERT_EQ(flat->headers.set.size(), 2u);
  EXPECT_EQ(flat->headers.set[0].name, "Content-Type");
  EXPECT_EQ(flat->headers.set[0].value.text(), "");
  EXPECT_EQ(flat->headers.set[1].value.text(), "3");
  EXPECT_TRUE(flat->headers.add.empty());
}

TEST(ResponseRewriteConfig, Base64LikeNginx) {
  struct B64 {
    const char* in;
    bool ok;
    const char* out;
  };
  const B64 cases[] = {
      {"SGVsbG8K", true, "Hello\n"},
      {"aGVsbG8=", true, "hello"},
      {"aGVsbG8", true, "hello"},           // padding optional
      {"aGVsbG8=garbage!", true, "hello"},  // nothing after the first '=' is read
      {"aGVs bG8=", false, ""},
      {"aGVsb", false, ""},  // 5 characters: one odd one
      {"a-_b", false, ""},   // the URL-safe alphabet is not the standard one
      {"", true, ""},
  };
  for (const B64& b : cases) {
    std::string out;
    EXPECT_EQ(decode_base64(b.in, &out), b.ok) << b.in;
    if (b.ok) {
      EXPECT_EQ(out, b.out) << b.in;
    }
  }
  std::string bin;
  ASSERT_TRUE(decode_base64("AP8A", &bin));
  EXPECT_EQ(bin, std::string("\x00\xff\x00", 3));
}

TEST(ResponseRewriteConfig, MetadataIsAnything) {
  EXPECT_TRUE(check(Json::parse(R"({"x": 1})"), plugin::PluginUse::kMetadata).is_ok());
}

TEST(ResponseRewriteConfig, SchemaIsJson) {
  Json s = Json::parse(kSchema);
  EXPECT_EQ(s["properties"]["status_code"]["maximum"], 598);
  EXPECT_EQ(s["properties"]["filters"]["items"]["properties"]["options"]["default"], "jo");
  EXPECT_TRUE(s["properties"]["headers"].contains("anyOf"));
  EXPECT_TRUE(s["dependencies"].contains("body"));
}

}  // namespace
}  // namespace sluice::plugins::response_rewrite
