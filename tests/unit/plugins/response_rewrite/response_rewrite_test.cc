// response-rewrite's hooks, run through the plugin chain on a fake request context: what
// header_filter leaves in ctx.resp, and what body_filter makes of the body's pieces.

#include "plugins/response_rewrite/response_rewrite.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plugin/chain.h"
#include "plugins/response_rewrite/held_bodies.h"

namespace sluice::plugins::response_rewrite {
namespace {

using plugin::Json;
using plugin::Phase;

std::shared_ptr<const plugin::Plugin> make(plugin::Shared& shared, const std::string& conf) {
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  EXPECT_TRUE(p.is_ok()) << conf << ": " << p.status().message();
  return p.is_ok() ? *p : nullptr;
}

std::unique_ptr<plugin::Chain> chain_of(std::shared_ptr<const plugin::Plugin> p) {
  std::vector<plugin::Entry> entries(1);
  entries[0].name = "response-rewrite";
  entries[0].priority = 899;
  entries[0].plugin = std::move(p);
  return std::make_unique<plugin::Chain>(std::move(entries));
}

// A request on route 1 from 10.0.0.7 whose upstream answers 200 with a few headers.
class ResponseRewriteTest : public ::testing::Test {
 protected:
  ResponseRewriteTest() {
    info().worker_init(shared_, worker_);
    ctx_.worker = &worker_;
    ctx_.route_id = "1";
    client();
    ctx_.upstream_ip = "127.0.0.1";
    up_.status = 200;
    up_.headers[0] = {"Content-Type", "text/plain"};
    up_.headers[1] = {"X-Up", "u"};
    up_.headers[2] = {"ETag", "\"abc\""};
    up_.headers[3] = {"Content-Length", "12"};
    up_.num_headers = 4;
  }

  void client() {
    ctx_.match.remote_addr = "10.0.0.7";
    router::parse_ip(ctx_.match.remote_addr, &ctx_.match.remote_ip);
    ctx_.match.server_port = 9080;
  }
  void use(const std::string& conf) {
    route_ = chain_of(make(shared_, conf));
    chains_.route = route_.get();
  }
  // header_filter on the upstream's answer (or, with `gateway`, on the gateway's own).
  void head(int status, bool gateway = false) {
    up_.status = status;
    ctx_.status = status;
    ctx_.upstream_resp = gateway ? nullptr : &up_;
    plugin::run_response(chains_, ctx_, Phase::kHeaderFilter);
  }
  // The body the client gets for these pieces, the last one carrying eof.
  std::string body(const std::vector<std::string>& pieces) {
    std::string out;
    for (size_t i = 0; i < pieces.size(); ++i) {
      out += plugin::run_body_filter(chains_, ctx_, pieces[i], i + 1 == pieces.size());
    }
    return out;
  }
  // "name: value" for every field plugins added or set, in order.
  std::string added() const {
    std::string out;
    ctx_.resp.headers.for_each_added([&](std::string_view n, std::string_view v) {
      out.append(n).append(": ").append(v).append("\n");
    });
    return out;
  }

  plugin::Shared shared_;
  plugin::WorkerLocal worker_;
  plugin::Context ctx_;
  http::ResponseHead up_;
  std::unique_ptr<plugin::Chain> route_;
  plugin::Chains chains_;
};

TEST_F(ResponseRewriteTest, InfoAndPhases) {
  EXPECT_EQ(info().name, "response-rewrite");
  EXPECT_EQ(info().priority, 899);
  EXPECT_FALSE(info().stream);
  EXPECT_EQ(Json::parse(info().schema)["properties"]["status_code"]["minimum"], 200);
  constexpr uint32_t kHead = plugin::phase_bit(Phase::kHeaderFilter);
  constexpr uint32_t kBody = plugin::phase_bit(Phase::kBodyFilter);
  constexpr uint32_t kLog = plugin::phase_bit(Phase::kLog);
  EXPECT_EQ(make(shared_, R"({"status_code": 403})")->phases(), kHead);
  EXPECT_EQ(make(shared_, R"({"headers": {"X-A": "1"}})")->phases(), kHead);
  EXPECT_EQ(make(shared_, R"({"body": ""})")->phases(), kHead | kBody);
  EXPECT_EQ(make(shared_, R"({"filters": [{"regex": "a", "replace": "b"}]})")->phases(),
            kHead | kBody | kLog);
  // The upstream's address is in the context for every chain: no log hook needed for it.
  EXPECT_EQ(make(shared_, R"({"headers": {"add": ["X-A: ${balancer_ip}"]}})")->phases(), kHead);
  plugin::Shared shared;
  auto bad = info().make(Json::parse(R"({"status_code": 600})"), {"route/1", shared});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            R"(property "status_code" validation failed: expected 600 to be at most 598)");
}

// APISIX's doc example: a 302 with a Location.
TEST_F(ResponseRewriteTest, StatusAndFlatHeaders) {
  use(R"({"headers": {"Location": "https://www.iresty.com"}, "status_code": 302})");
  head(200);
  EXPECT_EQ(ctx_.resp.status, 302);
  EXPECT_EQ(added(), "Location: https://www.iresty.com\n");
  EXPECT_FALSE(ctx_.resp.body_changes);
  EXPECT_EQ(ctx_.resp.content_length, -1);
  EXPECT_EQ(body({"upstream ", "body"}), "upstream body");  // no body_filter: untouched
}

TEST_F(ResponseRewriteTest, BodyReplacesEveryPieceAndSaysItsLength) {
  use(R"({"body": "new body\n", "headers": {"X-Server-id": 3, "Content-Type": ""}})");
  head(200);
  EXPECT_EQ(ctx_.resp.status, 0);
  EXPECT_TRUE(ctx_.resp.body_changes);
  EXPECT_EQ(ctx_.resp.content_length, 9);
  EXPECT_TRUE(ctx_.resp.headers.drops("ETag"));
  EXPECT_TRUE(ctx_.resp.headers.drops("content-encoding"));
  EXPECT_TRUE(ctx_.resp.headers.drops("Last-Modified"));
  EXPECT_TRUE(ctx_.resp.headers.drops("Content-Type"));  // "" removes
  EXPECT_FALSE(ctx_.resp.headers.drops("X-Up"));
  EXPECT_EQ(added(), "X-Server-id: 3\n");
  EXPECT_EQ(body({"hello ", "wor", "ld"}), "new body\n");
}

TEST_F(ResponseRewriteTest, BodyComesWithAnEmptyLastPieceToo) {
  use(R"({"body": "x"})");
  head(200);
  std::vector<std::string> seen;
  for (auto [piece, eof] : {std::pair{"abc", false}, {"def", false}, {"", true}}) {
    seen.emplace_back(plugin::run_body_filter(chains_, ctx_, piece, eof));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"", "", "x"}));
}

TEST_F(ResponseRewriteTest, NoLengthForAStatusWithoutBody) {
  use(R"({"body": "abc"})");
  for (int status : {204, 304, 101}) {
    ctx_.reset();
    ctx_.worker = &worker_;
    head(status);
    EXPECT_TRUE(ctx_.resp.body_changes) << status;
    EXPECT_EQ(ctx_.resp.content_length, -1) << status;
  }
  use(R"({"body": "abc", "status_code": 200})");  // a 204 turned into a 200 has one
  ctx_.reset();
  ctx_.worker = &worker_;
  head(204);
  EXPECT_EQ(ctx_.resp.content_length, 3);
  use(R"({"body": "abc", "status_code": 204})");
  ctx_.reset();
  ctx_.worker = &worker_;
  head(200);
  EXPECT_EQ(ctx_.resp.content_length, -1);
}

TEST_F(ResponseRewriteTest, Base64Body) {
  use(R"({"body": "AP8KSGk=", "body_base64": true})");
  head(200);
  EXPECT_EQ(ctx_.resp.content_length, 5);
  EXPECT_EQ(body({""}), std::string("\x00\xff\nHi", 5));
}

TEST_F(ResponseRewriteTest, GatewayAnswerIsRewrittenToo) {
  use(R"({"status_code": 200, "body": "{\"ok\":true}", "headers": {"X-A": "$status"}})");
  head(503, /*gateway=*/true);
  EXPECT_EQ(ctx_.resp.status, 200);
  EXPECT_EQ(added(), "X-A: 200\n");  // $status after the rewrite, as nginx's $status reads
  EXPECT_EQ(body({R"({"error_msg":"Requests are too frequent, please try again later."})"}),
            R"({"ok":true})");
}

// APISIX t/plugin/response-rewrite.t TEST 18-20: a 500 becomes a 403, a 200 stays.
TEST_F(ResponseRewriteTest, VarsDecidePerResponse) {
  use(R"({"body": "new body3\n", "status_code": 403, "vars": [["status", "==", 500]]})");
  head(500);
  EXPECT_EQ(ctx_.resp.status, 403);
  EXPECT_EQ(body({"oops"}), "new body3\n");

  ctx_.reset();
  ctx_.worker = &worker_;
  head(200);
  EXPECT_TRUE(ctx_.resp.empty());
  EXPECT_EQ(ctx_.resp.content_length, -1);
  EXPECT_EQ(body({"hello ", "world\n"}), "hello world\n");
}

TEST_F(ResponseRewriteTest, VarsSeeUpstreamAndSentHeaders) {
  use(R"({"headers": {"X-Hit": "1"},
          "vars": [["upstream_http_x_up", "==", "u"], ["sent_http_content_type", "~~", "^text/"],
                   ["upstream_status", "==", 200], ["remote_addr", "ipmatch", "10.0.0.0/8"]]})");
  head(200);
  EXPECT_EQ(added(), "X-Hit: 1\n");

  ctx_.reset();
  ctx_.worker = &worker_;
  client();
  ctx_.resp.headers.remove("Content-Type");  // an earlier plugin dropped it: not sent
  head(200);
  EXPECT_EQ(added(), "");

  ctx_.reset();
  ctx_.worker = &worker_;
  client();
  head(200, /*gateway=*/true);  // no upstream: upstream_* are nil
  EXPECT_EQ(added(), "");
}

TEST_F(ResponseRewriteTest, VarsSeeTheStatusAnEarlierPluginSet) {
  use(R"({"headers": {"X-Hit": "1"}, "vars": [["status", "==", 201]]})");
  ctx_.resp.status = 201;
  head(200);
  EXPECT_EQ(added(), "X-Hit: 1\n");
}

// add, then set, then remove, as APISIX plays them.
TEST_F(ResponseRewriteTest, HeaderOperationsInApisixOrder) {
  use(R"({"headers": {
            "add": ["X-A: 1", "X-A: 2", "X-D: added", "Set-Cookie: a=1; Max-Age=60"],
            "set": {"X-D": "set", "X-Up": "over", "X-Gone": "x", "X-Num": 7},
            "remove": ["X-Gone", "Content-Type"]}})");
  head(200);
  EXPECT_EQ(added(),
            "X-A: 1\nX-A: 2\nSet-Cookie: a=1; Max-Age=60\nX-D: set\nX-Num: 7\nX-Up: over\n");
  EXPECT_TRUE(ctx_.resp.headers.drops("X-Up"));  // the upstream's X-Up is replaced
  EXPECT_TRUE(ctx_.resp.headers.drops("Content-Type"));
  EXPECT_FALSE(ctx_.resp.headers.drops("ETag"));  // no body change, validators stay
}

TEST_F(ResponseRewriteTest, HeaderValuesResolveVariables) {
  use(R"({"headers": {"set": {
            "X-Client": "$remote_addr:$server_port",
            "X-Route": "route=${route_id}",
            "X-Node": "$balancer_ip",
            "X-Up": "${upstream_http_x_up}-$upstream_status",
            "X-Default": "${consumer_name ?? anonymous}",
            "X-Escaped": "\\$remote_addr costs $",
            "X-Empty": "$upstream_http_missing"}}})");
  head(200);
  EXPECT_EQ(added(),
            "X-Client: 10.0.0.7:9080\nX-Default: anonymous\nX-Escaped: \\$remote_addr costs $\n"
            "X-Node: 127.0.0.1\nX-Route: route=1\nX-Up: u-200\n");
  EXPECT_TRUE(ctx_.resp.headers.drops("X-Empty"));  // rendered empty: removed, as nginx does
}

TEST_F(ResponseRewriteTest, FiltersHoldTheBodyAndSubstituteAtTheEnd) {
  use(R"({"vars": [["status", "==", 200]],
          "filters": [{"regex": "l", "replace": "t", "scope": "global"},
                      {"regex": "^h", "replace": "H"}]})");
  head(200);
  EXPECT_TRUE(ctx_.resp.body_changes);
  EXPECT_EQ(ctx_.resp.content_length, -1);
  EXPECT_TRUE(ctx_.resp.headers.drops("ETag"));
  HeldBodies* held = HeldBodies::of(&worker_);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(plugin::run_body_filter(chains_, ctx_, "hel", false), "");
  EXPECT_EQ(plugin::run_body_filter(chains_, ctx_, "lo wor", false), "");
  EXPECT_EQ(held->size(), 1u);
  EXPECT_EQ(plugin::run_body_filter(chains_, ctx_, "ld\n", true), "Hetto wortd\n");
  EXPECT_EQ(held->size(), 0u);
}

TEST_F(ResponseRewriteTest, FiltersLetGoOfABodyTheResponseNeverFinished) {
  use(R"({"filters": [{"regex": "a", "replace": "b"}]})");
  head(200);
  EXPECT_EQ(body({"aaa", "aaa"}), "baaaaa");  // scope "once" by default
  head(200);
  plugin::run_body_filter(chains_, ctx_, "aaa", false);  // the client went away here
  HeldBodies* held = HeldBodies::of(&worker_);
  EXPECT_EQ(held->size(), 1u);
  plugin::run_response(chains_, ctx_, Phase::kLog);
  EXPECT_EQ(held->size(), 0u);
}

TEST_F(ResponseRewriteTest, FiltersOnAGatewayAnswer) {
  use(R"({"filters": [{"regex": "\"error_msg\"", "replace": "\"message\""}]})");
  head(404, /*gateway=*/true);
  EXPECT_EQ(body({"{\"error_msg\":\"404 Route Not Found\"}\n"}),
            "{\"message\":\"404 Route Not Found\"}\n");
}

// A global rule and the route both run response-rewrite: each decides for itself.
TEST_F(ResponseRewriteTest, GlobalRuleAndRouteMarkSeparately) {
  auto global = chain_of(make(shared_, R"({"body": "global", "vars": [["status", "==", 404]]})"));
  chains_.global = global.get();
  use(R"({"body": "route", "vars": [["status", "==", 200]]})");
  head(200);
  EXPECT_EQ(ctx_.resp.content_length, 5);
  EXPECT_EQ(body({"upstream"}), "route");

  ctx_.reset();
  ctx_.worker = &worker_;
  head(404);
  EXPECT_EQ(ctx_.resp.content_length, 6);
  EXPECT_EQ(body({"upstream"}), "global");
}

TEST_F(ResponseRewriteTest, TwoFilterConfsHoldTwoBodies) {
  auto global = chain_of(
      make(shared_, R"({"filters": [{"regex": "b", "replace": "c", "scope": "global"}]})"));
  chains_.global = global.get();
  use(R"({"filters": [{"regex": "a", "replace": "b", "scope": "global"}]})");
  head(200);
  // The global rule's filter runs first on each piece: it sees "aab", the route sees its "aac".
  EXPECT_EQ(plugin::run_body_filter(chains_, ctx_, "aa", false), "");
  EXPECT_EQ(HeldBodies::of(&worker_)->size(), 2u);
  EXPECT_EQ(plugin::run_body_filter(chains_, ctx_, "b", true), "bbc");
  EXPECT_EQ(HeldBodies::of(&worker_)->size(), 0u);
}

}  // namespace
}  // namespace sluice::plugins::response_rewrite
