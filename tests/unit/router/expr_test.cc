#include "router/expr.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "unit/router/fake_request.h"

namespace sluice::router {
namespace {

using nlohmann::json;
using testing::FakeRequest;

// One request that every case in the table is evaluated against.
class ExprEval : public ::testing::Test {
 protected:
  FakeRequest req_{"GET",
                   "/api/v1/users?id=42&name=Bob&flag&empty=&name=second&enc=a%20b&zero=042",
                   "API.Example.com:8080",
                   {{"X-Api-Version", "2"},
                    {"Accept", "text/html, application/json ,*/*"},
                    {"Cookie", "session=abc; theme=dark"},
                    {"cookie", "lang=en"},
                    {"X_Under", "u"},
                    {"X-Dup", "first"},
                    {"X-Dup", "second"},
                    {"X-Real-IP", "1.2.3.9"},
                    {"X-V6", "2001:db8::5"}},
                   "10.1.2.3",
                   9080};
};

struct EvalCase {
  const char* vars;
  bool expect;
};

const EvalCase kEvalCases[] = {
    {R"([])", true},
    // == and ~=: strings, numbers, nil, null
    {R"([["arg_id", "==", "42"]])", true},
    {R"([["arg_id", "==", 42]])", true},
    {R"([["arg_id", "==", 42.0]])", true},
    {R"([["arg_zero", "==", 42]])", true},
    {R"([["arg_zero", "==", "42"]])", false},
    {R"([["arg_name", "==", "Bob"]])", true},
    {R"([["arg_name", "==", "second"]])", false},
    {R"([["arg_Name", "==", "Bob"]])", false},
    {R"([["arg_flag", "==", ""]])", true},
    {R"([["arg_empty", "==", ""]])", true},
    {R"([["arg_enc", "==", "a%20b"]])", true},
    {R"([["arg_missing", "==", ""]])", false},
    {R"([["arg_missing", "==", null]])", true},
    {R"([["arg_id", "==", null]])", false},
    {R"([["arg_id", "==", true]])", false},
    {R"([["arg_id", "~=", "42"]])", false},
    {R"([["arg_id", "~=", "43"]])", true},
    {R"([["arg_id", "~=", 42]])", false},
    {R"([["arg_name", "~=", 42]])", true},
    {R"([["arg_missing", "~=", "x"]])", true},
    {R"([["arg_missing", "~=", 1]])", true},
    {R"([["arg_id", "42"]])", true},
    {R"([["arg_id", "43"]])", false},
    // > >= < <=
    {R"([["arg_id", ">", 41]])", true},
    {R"([["arg_id", ">", "41"]])", true},
    {R"([["arg_id", ">", 42]])", false},
    {R"([["arg_id", ">=", 42]])", true},
    {R"([["arg_id", "<", 43]])", true},
    {R"([["arg_id", "<", 42.5]])", true},
    {R"([["arg_id", "<=", 42]])", true},
    {R"([["arg_id", "<=", 41]])", false},
    {R"([["arg_name", ">", 1]])", false},
    {R"([["arg_missing", "<", 1]])", false},
    {R"([["arg_id", ">", "abc"]])", false},
    {R"([["server_port", ">", 9000]])", true},
    // negation
    {R"([["arg_id", "!", ">", 100]])", true},
    {R"([["arg_id", "!", "==", "42"]])", false},
    {R"([["arg_missing", "!", "==", "x"]])", true},
    {R"([["arg_missing", "!", "~=", "x"]])", false},
    {R"([["arg_missing", "!", ">", 1]])", true},
    // headers, cookies
    {R"([["http_x_api_version", "==", "2"]])", true},
    {R"([["http_X_API_VERSION", "==", "2"]])", true},
    // APISIX's ctx.lua turns '-' into '_' in an http_* name (traffic-split's docs use it).
    {R"([["http_x-api-version", "==", "2"]])", true},
    {R"([["http_X-Api_Version", "==", "2"]])", true},
    {R"([["http_x_under", "==", "u"]])", true},
    {R"([["http_x_dup", "==", "first"]])", true},
    {R"([["http_x_missing", "==", ""]])", false},
    {R"([["cookie_session", "==", "abc"]])", true},
    {R"([["cookie_theme", "==", "dark"]])", true},
    {R"([["cookie_lang", "==", "en"]])", true},
    {R"([["cookie_Session", "==", "abc"]])", false},
    {R"([["cookie_none", "~=", "x"]])", true},
    // built-in variables
    {R"([["uri", "==", "/api/v1/users"]])", true},
    {R"([["request_uri", "~~", "^/api/v1/users\\?id=42&"]])", true},
    {R"([["args", "~~", "^id=42&"]])", true},
    {R"([["host", "==", "api.example.com"]])", true},
    {R"([["remote_addr", "==", "10.1.2.3"]])", true},
    {R"([["request_method", "==", "GET"]])", true},
    {R"([["server_port", "==", "9080"]])", true},
    {R"([["server_port", "==", 9080]])", true},
    {R"([["nonsense", "==", "x"]])", false},
    {R"([["nonsense", "~=", "x"]])", true},
    {R"([["uri_param_id", "==", "1"]])", false},
    // regex
    {R"([["uri", "~~", "^/api/v[0-9]+/"]])", true},
    {R"([["uri", "~~", "users$"]])", true},
    {R"([["uri", "~~", "^/API"]])", false},
    {R"([["uri", "~*", "^/API"]])", true},
    {R"js([["uri", "~~", "^/(a)(p)(i)/(v)([0-9])/(u)(s)"]])js", true},
    {R"([["arg_missing", "~~", ".*"]])", false},
    {R"([["arg_missing", "!", "~~", ".*"]])", true},
    // in, has
    {R"([["request_method", "in", ["GET", "POST"]]])", true},
    {R"([["request_method", "IN", ["GET"]]])", true},
    {R"([["request_method", "in", ["PUT"]]])", false},
    {R"([["arg_id", "in", [41, 42]]])", true},
    {R"([["arg_id", "in", [42.0]]])", true},
    {R"([["arg_id", "in", []]])", false},
    {R"([["arg_missing", "in", ["x"]]])", false},
    // `has` needs a table and APISIX variables are strings, repeated headers too.
    {R"([["http_x_dup", "has", "second"]])", false},
    {R"([["http_x_dup", "has", "first"]])", false},
    {R"([["http_x_dup", "has", "third"]])", false},
    {R"([["http_accept", "has", "application/json"]])", false},
    {R"([["arg_missing", "has", "x"]])", false},
    {R"([["http_x_dup", "!", "has", "first"]])", true},
    // ipmatch
    {R"([["remote_addr", "ipmatch", "10.0.0.0/8"]])", true},
    {R"([["remote_addr", "ipmatch", ["192.168.0.0/16", "10.1.2.3"]]])", true},
    {R"([["remote_addr", "ipmatch", ["192.168.0.0/16", "::1"]]])", false},
    {R"([["remote_addr", "!", "ipmatch", "192.168.0.0/16"]])", true},
    {R"([["http_x_real_ip", "ipmatch", "1.2.3.0/24"]])", true},
    {R"([["http_x_v6", "ipmatch", "2001:db8::/32"]])", true},
    {R"([["http_x_v6", "ipmatch", "10.0.0.0/8"]])", false},
    {R"([["arg_name", "ipmatch", "0.0.0.0/0"]])", false},
    // logic
    {R"([["arg_id", "==", "42"], ["arg_name", "==", "Bob"]])", true},
    {R"([["arg_id", "==", "42"], ["arg_name", "==", "Alice"]])", false},
    {R"(["OR", ["arg_id", "==", "1"], ["arg_id", "==", "42"]])", true},
    {R"(["or", ["arg_id", "==", "1"], ["arg_id", "==", "2"]])", false},
    {R"(["AND", ["arg_id", "==", "42"], ["arg_name", "==", "Bob"]])", true},
    {R"(["AND", ["arg_id", "==", "42"], ["arg_name", "==", "x"]])", false},
    {R"(["!OR", ["arg_id", "==", "1"], ["arg_id", "==", "2"]])", true},
    {R"(["!AND", ["arg_id", "==", "42"], ["arg_name", "==", "Bob"]])", false},
    {R"([["arg_id", "==", "42"],
        ["OR", ["arg_name", "==", "x"],
               ["AND", ["uri", "~~", "users"], ["host", "==", "api.example.com"]]]])",
     true},
    {R"([["arg_id", "==", "42"],
        ["OR", ["arg_name", "==", "x"],
               ["AND", ["uri", "~~", "users"], ["host", "==", "other.com"]]]])",
     false},
    {R"(["OR", [["arg_id", "==", "1"], ["arg_name", "==", "Bob"]],
               [["arg_id", "==", "42"], ["arg_name", "==", "Bob"]]])",
     true},
};

TEST_F(ExprEval, Table) {
  for (const EvalCase& c : kEvalCases) {
    auto expr = Expr::compile(json::parse(c.vars));
    ASSERT_TRUE(expr.is_ok()) << c.vars << ": " << expr.status().message();
    EXPECT_EQ(expr->eval(req_.ctx), c.expect) << c.vars;
  }
}

TEST(Expr, EmptyAndNullAreTrue) {
  FakeRequest req("GET", "/");
  EXPECT_TRUE(Expr().eval(req.ctx));
  EXPECT_TRUE(Expr().empty());
  EXPECT_TRUE(Expr::compile(json())->empty());
  EXPECT_TRUE(Expr::compile(json::array())->eval(req.ctx));
}

// As APISIX: uri is nginx's normalised $uri, request_uri the target as sent.
TEST(Expr, UriIsNormalisedRequestUriIsRaw) {
  FakeRequest req("GET", "//api/%76%31/./users?id=1");
  auto is = [&req](const char* vars) { return Expr::compile(json::parse(vars))->eval(req.ctx); };
  EXPECT_TRUE(is(R"([["uri", "==", "/api/v1/users"]])"));
  EXPECT_TRUE(is(R"([["request_uri", "==", "//api/%76%31/./users?id=1"]])"));
  // An absolute-form target: request_uri starts at the path, as nginx's does.
  FakeRequest abs("GET", "http://a.com/x/../y?z=1");
  abs.head.authority = "a.com";
  abs.head.path = "/x/../y";
  abs.head.uri = "/y";
  EXPECT_TRUE(
      Expr::compile(json::parse(R"([["request_uri", "==", "/x/../y?z=1"]])"))->eval(abs.ctx));
}

TEST(Expr, HostVariableStripsPortAndBrackets) {
  struct Case {
    const char* host;
    const char* vars;
    bool expect;
  };
  const Case cases[] = {
      {"[::1]:9080", R"([["host", "==", "[::1]"]])", true},
      {"Foo.COM.", R"([["host", "==", "foo.com"]])", true},
      {"", R"([["host", "~=", "x"]])", true},
      {"", R"([["host", "==", ""]])", false},
  };
  for (const Case& c : cases) {
    FakeRequest req("GET", "/", c.host);
    EXPECT_EQ(Expr::compile(json::parse(c.vars))->eval(req.ctx), c.expect) << c.host;
  }
}

TEST(Expr, IpmatchIpv6Client) {
  FakeRequest req("GET", "/", "", {}, "fe80::1234");
  EXPECT_TRUE(
      Expr::compile(json::parse(R"([["remote_addr","ipmatch","fe80::/10"]])"))->eval(req.ctx));
  EXPECT_FALSE(
      Expr::compile(json::parse(R"([["remote_addr","ipmatch","10.0.0.0/8"]])"))->eval(req.ctx));
}

TEST(Expr, CompileErrors) {
  struct Case {
    const char* vars;
    const char* error;
  };
  const Case cases[] = {
      {R"({"a": 1})", R"(rule should be an array in {"a":1})"},
      {R"(["arg_id", "==", "1"])",
       R"(rule should be wrapped inside brackets in ["arg_id","==","1"])"},
      {R"([["arg_id", "=~", "1"]])", R"(invalid operator '=~' in ["arg_id","=~","1"])"},
      {R"([["arg_id", 5, "1"]])", R"(invalid operator '5' in ["arg_id",5,"1"])"},
      {R"([["arg_id", "x", "==", "1"]])", R"(bad 'not' expression in ["arg_id","x","==","1"])"},
      {R"([["arg_id"]])", R"(invalid expression in ["arg_id"])"},
      {R"([["arg_id", "in"]])", R"(invalid expression in ["arg_id","in"])"},
      {R"([["arg_id", "==", "1", "2", "3"]])",
       R"(invalid expression in ["arg_id","==","1","2","3"])"},
      {R"([[1, "==", "1"]])", R"(invalid expression in [1,"==","1"])"},
      {R"([[]])", R"(rule too short in [])"},
      {R"([["arg_id", "==", "1"], "x"])", R"(invalid expression in "x")"},
      {R"(["OR", ["arg_id", "==", "1"]])", R"(rule too short in ["OR",["arg_id","==","1"]])"},
      {R"([["uri", "~~", "(unclosed"]])",
       R"(invalid regex '(unclosed': missing closing parenthesis at offset 9 in ["uri","~~","(unclosed"])"},
      {R"([["uri", "~~", 1]])", R"(regex must be a string in ["uri","~~",1])"},
      {R"([["remote_addr", "ipmatch", "300.1.1.1"]])",
       R"(invalid ip address: 300.1.1.1 in ["remote_addr","ipmatch","300.1.1.1"])"},
      {R"([["remote_addr", "ipmatch", []]])",
       R"(invalid ip address in ["remote_addr","ipmatch",[]])"},
      {R"([["remote_addr", "ipmatch", [7]]])",
       R"(invalid ip address in ["remote_addr","ipmatch",[7]])"},
      {R"([["arg_x", "in", "a"]])", R"('in' needs an array value in ["arg_x","in","a"])"},
      {R"([["arg_x", "has", ["a"]]])", R"('has' needs a string value in ["arg_x","has",["a"]])"},
      // Body variables: Sluice matches before reading the body, so they could never match.
      {R"([["post_arg_name", "==", "x"]])",
       R"(variable post_arg_name is not supported yet: matching on the request body is not implemented in ["post_arg_name","==","x"])"},
      {R"(["OR", ["arg_a", "==", "1"], ["post_arg_a.b", "!", "==", "1"]])",
       R"(variable post_arg_a.b is not supported yet: matching on the request body is not implemented in ["post_arg_a.b","!","==","1"])"},
      {R"([["graphql_operation", "==", "query"]])",
       R"(variable graphql_operation is not supported yet: matching on the request body (GraphQL) is not implemented in ["graphql_operation","==","query"])"},
      {R"([["graphql_name", "==", "q"]])",
       R"(variable graphql_name is not supported yet: matching on the request body (GraphQL) is not implemented in ["graphql_name","==","q"])"},
      {R"([["graphql_root_fields", "has", "owner"]])",
       R"(variable graphql_root_fields is not supported yet: matching on the request body (GraphQL) is not implemented in ["graphql_root_fields","has","owner"])"},
  };
  for (const Case& c : cases) {
    auto expr = Expr::compile(json::parse(c.vars));
    ASSERT_FALSE(expr.is_ok()) << c.vars;
    EXPECT_EQ(expr.status().message(),
              std::string("failed to validate the 'vars' expression: ") + c.error);
  }
}

TEST(Expr, DeepNestingIsRejected) {
  const json leaf = json::parse(R"(["arg_x", "==", "1"])");
  json rule = leaf;
  for (int i = 0; i < 40; ++i) {
    rule = json::array({"OR", rule, leaf});
  }
  auto expr = Expr::compile(rule);
  ASSERT_FALSE(expr.is_ok());
  EXPECT_TRUE(expr.status().message().starts_with(
      "failed to validate the 'vars' expression: rule nested too deeply in "));
}

TEST(Expr, CopiesShareTheProgram) {
  FakeRequest req("GET", "/x?a=1");
  auto compiled = Expr::compile(json::parse(R"([["arg_a", "~~", "^1$"]])"));
  ASSERT_TRUE(compiled.is_ok());
  const Expr copy = *compiled;
  compiled = Expr();
  EXPECT_TRUE(copy.eval(req.ctx));
}

}  // namespace
}  // namespace sluice::router
