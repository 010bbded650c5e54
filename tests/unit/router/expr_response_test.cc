// The response variables of an expression evaluated on a response (response-rewrite's `vars`):
// status, upstream_status, sent_http_*, upstream_http_*; and what a response phase sees once
// the request head is gone.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "router/expr.h"
#include "unit/router/fake_request.h"

namespace sluice::router {
namespace {

using nlohmann::json;
using testing::FakeRequest;

bool eval(const char* vars, const MatchContext& ctx) {
  auto e = Expr::compile(json::parse(vars));
  EXPECT_TRUE(e.is_ok()) << vars << ": " << e.status().message();
  return e.is_ok() && e->eval(ctx);
}

class ExprResponse : public ::testing::Test {
 protected:
  ExprResponse() {
    up_.status = 502;
    up_.headers[0] = {"Content-Type", "text/html"};
    up_.headers[1] = {"X-Upstream-Only", "u"};
    up_.num_headers = 2;
    view_.status = 200;  // a plugin turned the 502 into a 200
    view_.upstream = &up_;
    req_.ctx.resp = &view_;
  }

  FakeRequest req_{"GET", "/a?x=1", "h.com", {{"X-Req", "r"}}, "10.0.0.7", 9080};
  http::ResponseHead up_;
  ResponseView view_;
};

TEST_F(ExprResponse, StatusAndUpstreamVariables) {
  struct Case {
    const char* vars;
    bool expect;
  };
  const Case cases[] = {
      {R"([["status", "==", 200]])", true},
      {R"([["status", "==", "200"]])", true},
      {R"([["status", "==", 502]])", false},
      {R"([["status", ">=", 200], ["status", "<", 300]])", true},
      {R"([["upstream_status", "==", 502]])", true},
      {R"([["upstream_http_x_upstream_only", "==", "u"]])", true},
      {R"([["upstream_http_X_UPSTREAM_ONLY", "==", "u"]])", true},
      {R"([["upstream_http_content_type", "~~", "html"]])", true},
      {R"([["upstream_http_missing", "==", null]])", true},
      // No callback: sent_http_* reads the upstream's head.
      {R"([["sent_http_content_type", "==", "text/html"]])", true},
      // The request is still there while its head is readable.
      {R"([["http_x_req", "==", "r"], ["status", "==", 200]])", true},
      {R"([["uri", "==", "/a"]])", true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(eval(c.vars, req_.ctx), c.expect) << c.vars;
  }
}

TEST_F(ExprResponse, GatewayAnswerHasNoUpstreamVariables) {
  view_.upstream = nullptr;
  view_.status = 503;
  EXPECT_TRUE(eval(R"([["status", "==", 503]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["upstream_status", "==", 503]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["upstream_status", "==", null]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["upstream_http_content_type", "~~", ""]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["sent_http_content_type", "~~", ""]])", req_.ctx));
}

TEST_F(ExprResponse, SentHeaderCallbackWins) {
  struct Sent {
    static bool lookup(const void* arg, std::string_view name, std::string_view* out) {
      if (name == "x_added") {
        *out = *static_cast<const std::string*>(arg);
        return true;
      }
      return false;
    }
  };
  std::string added = "yes";
  view_.sent_header = &Sent::lookup;
  view_.arg = &added;
  EXPECT_TRUE(eval(R"([["sent_http_x_added", "==", "yes"]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["sent_http_X_Added", "==", "yes"]])", req_.ctx));
  // The callback says what is sent: an upstream header it does not report is not sent.
  EXPECT_FALSE(eval(R"([["sent_http_content_type", "==", "text/html"]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["upstream_http_content_type", "==", "text/html"]])", req_.ctx));
}

TEST_F(ExprResponse, WhileRoutingResponseVariablesAreNil) {
  req_.ctx.resp = nullptr;
  EXPECT_FALSE(eval(R"([["status", "==", 200]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["status", "~=", 200]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["sent_http_content_type", "==", "text/html"]])", req_.ctx));
}

TEST_F(ExprResponse, WithoutRequestHeadOnlyConnectionVariables) {
  req_.ctx.req = nullptr;
  EXPECT_TRUE(eval(R"([["remote_addr", "==", "10.0.0.7"]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["remote_addr", "ipmatch", "10.0.0.0/8"]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["server_port", "==", 9080]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["status", "==", 200]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["uri", "==", "/a"]])", req_.ctx));
  EXPECT_FALSE(eval(R"([["http_x_req", "==", "r"]])", req_.ctx));
  EXPECT_TRUE(eval(R"([["arg_x", "==", null]])", req_.ctx));
}

TEST(ExprRequestHeadVar, NamesTheFirstRequestHeadVariable) {
  struct Case {
    const char* vars;
    const char* expect;
  };
  const Case cases[] = {
      {R"([["status", "==", 200]])", ""},
      {R"([["remote_addr", "==", "1.2.3.4"], ["server_port", "==", 1]])", ""},
      {R"([["upstream_http_x", "==", "1"], ["sent_http_y", "==", "1"]])", ""},
      {R"([["nonsense", "==", "1"]])", ""},
      {R"([["status", "==", 200], ["OR", ["http_X_Foo", "==", "1"], ["uri", "==", "/"]]])",
       "http_X_Foo"},
      {R"([["arg_a", "==", "1"]])", "arg_a"},
      {R"([["cookie_a", "==", "1"]])", "cookie_a"},
      {R"([["host", "==", "a"]])", "host"},
      {R"([["request_method", "==", "GET"]])", "request_method"},
  };
  for (const Case& c : cases) {
    auto e = Expr::compile(json::parse(c.vars));
    ASSERT_TRUE(e.is_ok()) << c.vars;
    EXPECT_EQ(e->request_head_var(), c.expect) << c.vars;
  }
  EXPECT_EQ(Expr().request_head_var(), "");
}

TEST(VarRequestHead, TellsRequestFromResponseVariables) {
  EXPECT_TRUE(Var::parse("http_x").reads_request_head());
  EXPECT_TRUE(Var::parse("uri").reads_request_head());
  EXPECT_FALSE(Var::parse("remote_addr").reads_request_head());
  EXPECT_FALSE(Var::parse("server_port").reads_request_head());
  EXPECT_FALSE(Var::parse("status").reads_request_head());
  EXPECT_FALSE(Var::parse("sent_http_x").reads_request_head());
  EXPECT_FALSE(Var::parse("nonsense").reads_request_head());
  EXPECT_FALSE(Var().reads_request_head());
}

TEST_F(ExprResponse, VarFindTellsEmptyFromNil) {
  up_.headers[2] = {"X-Empty", ""};
  up_.num_headers = 3;
  VarScratch scratch;
  std::string_view v = "unset";
  EXPECT_TRUE(Var::parse("upstream_http_x_empty").find(req_.ctx, &scratch, &v));
  EXPECT_EQ(v, "");
  EXPECT_FALSE(Var::parse("upstream_http_x_empty").get(req_.ctx, &scratch, &v));
  EXPECT_FALSE(Var::parse("upstream_http_x_none").find(req_.ctx, &scratch, &v));
  EXPECT_FALSE(Var::parse("nonsense").find(req_.ctx, &scratch, &v));
  EXPECT_TRUE(Var::parse("status").find(req_.ctx, &scratch, &v));
  EXPECT_EQ(v, "200");
  EXPECT_TRUE(Var::parse("upstream_status").find(req_.ctx, &scratch, &v));
  EXPECT_EQ(v, "502");
}

TEST(HeaderNameIs, NginxVariableSpelling) {
  EXPECT_TRUE(header_name_is("Content-Type", "content_type"));
  EXPECT_TRUE(header_name_is("X_Under", "x_under"));
  EXPECT_FALSE(header_name_is("Content-Type", "content_typ"));
  EXPECT_FALSE(header_name_is("Content-Type", "Content_Type"));  // the name is lower-cased
}

}  // namespace
}  // namespace sluice::router
