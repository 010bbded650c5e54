// The exchange driven with no socket and no peer: an in-memory downstream (what the client's
// codec would do) and a scripted upstream request (what a node would answer). Routes, retries,
// the stale pooled connection's one retry, header rules, local replies, plugin suspension and
// edits, backpressure both ways, the upstream's early answer.

#include "server/exchange.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/server/exchange_fakes.h"

namespace sluice::server {
namespace {

TEST_F(ExchangeTest, NoRouteIsAGatewayMade404) {
  serve(1, 0);
  begin("GET /other HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 404);
  EXPECT_TRUE(down_.gateway_made);
  EXPECT_EQ(down_.body, "{\"error_msg\":\"404 Route Not Found\"}\n");
  EXPECT_EQ(down_.content_length, static_cast<int64_t>(down_.body.size()));
  EXPECT_EQ(down_.field("Content-Type"), "application/json");
  EXPECT_TRUE(down_.head_released);
  EXPECT_TRUE(up_->keys.empty());
}

TEST_F(ExchangeTest, ProxiesWithTheHeaderRules) {
  serve(1, 0);
  up_->tries.push_back({.fields = {{"X-Up", "1"},
                                   {"Connection", "X-Hop"},
                                   {"X-Hop", "h"},
                                   {"Keep-Alive", "timeout=5"}},
                        .body = {"hello ", "world"}});
  begin(
      "GET /hello?a=1 HTTP/1.1\r\nHost: example.com\r\nConnection: X-Secret\r\nX-Secret: s\r\n"
      "X-Forwarded-For: 10.0.0.1\r\nUser-Agent: t\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  ASSERT_EQ(up_->heads.size(), 1u);
  const std::string& h = up_->heads[0];
  EXPECT_EQ(h.rfind("GET /hello?a=1 HTTP/1.1\r\nHost: example.com\r\n", 0), 0u) << h;
  EXPECT_NE(h.find("User-Agent: t\r\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("X-Secret"), std::string::npos) << "a Connection-listed field went up: " << h;
  EXPECT_NE(h.find("X-Real-IP: 192.0.2.7\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("X-Forwarded-For: 10.0.0.1, 192.0.2.7\r\n"), std::string::npos) << h;
  EXPECT_NE(h.find("X-Forwarded-Port: 9080\r\n"), std::string::npos) << h;
  EXPECT_EQ(down_.status, 200);
  EXPECT_FALSE(down_.gateway_made);
  EXPECT_EQ(down_.field("X-Up"), "1");
  EXPECT_EQ(down_.field("X-Hop"), "<none>");
  EXPECT_EQ(down_.field("Keep-Alive"), "<none>");
  EXPECT_EQ(down_.content_length, 11);
  EXPECT_EQ(down_.body, "hello world");
  EXPECT_TRUE(down_.ended);
  EXPECT_EQ(up_->released_reusable, 1) << "a clean response returns its connection to the pool";
}

TEST_F(ExchangeTest, FailedTriesMoveToTheNextNodeAndTheLastStatusListsThemAll) {
  serve(3, 2);
  up_->tries.push_back({.kind = Try::Kind::kRefused});
  up_->tries.push_back({.kind = Try::Kind::kConnectFail});
  up_->tries.push_back({.kind = Try::Kind::kRefused});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->keys.size(), 3u);
  EXPECT_NE(up_->keys[0], up_->keys[1]);
  EXPECT_EQ(down_.status, 502);
  EXPECT_EQ(down_.field("X-APISIX-Upstream-Status"), "502, 502, 502");
}

TEST_F(ExchangeTest, RetriesStopWhenTheUpstreamsRetriesAreSpent) {
  serve(3, 1);
  up_->tries.push_back({.kind = Try::Kind::kConnectFail});
  up_->tries.push_back({.kind = Try::Kind::kConnectFail});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->keys.size(), 2u);
  EXPECT_EQ(down_.status, 502);
}

TEST_F(ExchangeTest, AStalePooledConnectionGetsOneFreshRetryOnTheSameNode) {
  serve(2, 0);
  up_->tries.push_back({.kind = Try::Kind::kCloseEarly, .reused = true});
  up_->tries.push_back({.body = {"ok"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  ASSERT_EQ(up_->keys.size(), 2u);
  EXPECT_EQ(up_->keys[0], up_->keys[1]) << "the same node, on a new connection";
  EXPECT_FALSE(up_->fresh[0]);
  EXPECT_TRUE(up_->fresh[1]);
  EXPECT_EQ(down_.status, 200);
  EXPECT_EQ(down_.body, "ok");
}

TEST_F(ExchangeTest, ARequestWithABodyIsNotRetriedOnAStaleConnection) {
  serve(1, 0);
  up_->tries.push_back({.kind = Try::Kind::kCloseEarly, .reused = true});
  down_.body_in = {"abc"};
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->keys.size(), 1u);
  EXPECT_EQ(down_.status, 502);
}

TEST_F(ExchangeTest, TheBodyGoesUpPieceByPieceAndLeavesTheClientBufferOnlyOnceWritten) {
  serve(1, 0);
  up_->tries.push_back({.status = 201});
  down_.body_in = {"one,", "two"};
  down_.body_complete = false;
  begin(
      "POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: "
      "100-continue\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);  // the rest of the body is not here yet
  EXPECT_EQ(down_.continues, 1);
  EXPECT_EQ(up_->sent_body, "[one,][two]");
  EXPECT_EQ(down_.consumed, 7u);
  EXPECT_NE(up_->heads[0].find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  down_.body_in = {"three"};
  down_.body_complete = true;
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->sent_body, "[one,][two][three][end]");
  EXPECT_EQ(down_.status, 201);
}

TEST_F(ExchangeTest, AClientThatGoesAwayMidBodyEndsTheExchange) {
  serve(1, 0);
  up_->tries.push_back({});
  down_.body_in = {"a"};
  down_.body_complete = false;
  down_.client_gone = true;
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kClose);
  EXPECT_EQ(down_.status, 0) << "nothing was answered";
  EXPECT_EQ(up_->released_reusable, 0);
}

TEST_F(ExchangeTest, ASlowClientHoldsTheUpstreamsBytes) {
  serve(1, 0);
  up_->tries.push_back({.body = {"aaa", "bbb"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  down_.blocked = true;
  EXPECT_EQ(run(), Exchange::Step::kWait);
  EXPECT_EQ(down_.pending, "aaa") << "one piece at a time while the client is full";
  EXPECT_EQ(down_.body, "");
  down_.blocked = false;
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.body, "aaabbb");
}

TEST_F(ExchangeTest, ASlowUpstreamBodyWaitsWithThePiecesSentSoFar) {
  serve(1, 0);
  up_->stall_body = true;
  up_->tries.push_back({.body = {"first", "second"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);
  EXPECT_EQ(down_.body, "first");
  EXPECT_FALSE(down_.ended);
  up_->stall_body = false;
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.body, "firstsecond");
}

TEST_F(ExchangeTest, TheUpstreamsEarlyAnswerReachesTheClientAndClosesTheConnection) {
  serve(1, 0);
  up_->tries.push_back({.kind = Try::Kind::kEarlyAnswer, .status = 413, .body = {"too big"}});
  down_.body_in = {"x"};
  down_.body_complete = false;
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 413);
  EXPECT_EQ(down_.body, "too big");
  EXPECT_TRUE(down_.close);
}

TEST_F(ExchangeTest, AnAnswerWhileTheClientPausesMidBodyIsRelayedAtOnce) {
  serve(1, 0);
  up_->tries.push_back({.status = 401, .body = {"who are you"}});
  down_.body_in = {"part"};
  down_.body_complete = false;  // the client pauses
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);
  EXPECT_EQ(down_.status, 0);
  up_->answer_now = true;  // the 401 arrives; the client still sends nothing
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 401);
  EXPECT_EQ(down_.body, "who are you");
  EXPECT_TRUE(down_.close);
  EXPECT_EQ(up_->released_reusable, 0) << "a connection with half a request on it is not reused";
}

TEST_F(ExchangeTest, APluginsReplyIsAGatewayMadeAnswer) {
  serve(1, 0, std::make_shared<TestPlugin>(TestPlugin::Mode::kReject));
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 429);
  EXPECT_EQ(down_.body, "{\"error_msg\":\"slow down\"}\n");
  EXPECT_TRUE(up_->keys.empty());
}

TEST_F(ExchangeTest, ASuspendedRequestWaitsThenResumesWhereItStopped) {
  auto plugin = std::make_shared<TestPlugin>(TestPlugin::Mode::kSuspend);
  serve(1, 0, plugin);
  up_->tries.push_back({.body = {"ok"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);
  EXPECT_TRUE(up_->keys.empty());
  EXPECT_FALSE(down_.head_released) << "the head stays readable for the hooks after resume";
  ASSERT_NE(plugin->token, 0u);
  worker_.resume(plugin->token, plugin::Action::kContinue);
  EXPECT_EQ(down_.wakes, 1);
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 200);
}

TEST_F(ExchangeTest, PluginsEditTheUpstreamRequestAndTheResponse) {
  auto plugin = std::make_shared<TestPlugin>(TestPlugin::Mode::kRewrite);
  serve(1, 0, plugin);
  up_->tries.push_back({.fields = {{"X-Via", "upstream"}}, .body = {"old", "body"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\nX-Added: 0\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  const std::string& h = up_->heads[0];
  EXPECT_EQ(h.rfind("GET /rewritten?x=1 HTTP/1.1\r\n", 0), 0u) << h;
  EXPECT_EQ(h.find("X-Added: 0"), std::string::npos) << h;
  EXPECT_NE(h.find("X-Added: 1\r\n"), std::string::npos) << h;
  EXPECT_EQ(down_.status, 201);
  EXPECT_EQ(down_.field("X-Via"), "test");
  EXPECT_EQ(down_.content_length, 8);
  EXPECT_EQ(down_.body, "new body");
  EXPECT_EQ(plugin->logged_status, 201) << "the log phase records the status the client got";
}

TEST_F(ExchangeTest, APluginThatNeedsTheBodyGetsItWholeAndTheUpstreamItsLength) {
  auto plugin = std::make_shared<TestPlugin>(TestPlugin::Mode::kBody);
  serve(1, 0, plugin);
  up_->tries.push_back({.body = {"ok"}});
  down_.body_in = {"hello ", "body"};
  down_.body_complete = false;
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);  // reading the body before any phase runs
  EXPECT_TRUE(up_->keys.empty());
  EXPECT_TRUE(down_.head_released) << "the head was copied, so the body can be read past it";
  down_.body_complete = true;
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(plugin->seen_body, "hello body");
  EXPECT_EQ(plugin->seen_path, "/hello");
  const std::string& h = up_->heads[0];
  EXPECT_NE(h.find("Content-Length: 10\r\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("Transfer-Encoding"), std::string::npos) << h;
  EXPECT_NE(h.find("Host: a\r\n"), std::string::npos) << "a view into the copied head: " << h;
  EXPECT_EQ(up_->sent_body, "hello body");
  EXPECT_EQ(down_.status, 200);
}

TEST_F(ExchangeTest, APluginThatNeedsTheBodyCanRefuseOnIt) {
  serve(1, 0, std::make_shared<TestPlugin>(TestPlugin::Mode::kBody));
  down_.body_in = {"please deny"};
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 403);
  EXPECT_TRUE(up_->keys.empty());
}

TEST_F(ExchangeTest, ABodyOverTheCapIsRefusedWith413) {
  settings_->client_max_body_size = 8;
  serve(1, 0, std::make_shared<TestPlugin>(TestPlugin::Mode::kBody));
  down_.body_in = {"12345", "67890"};
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 413);
  EXPECT_TRUE(up_->keys.empty());
}

TEST_F(ExchangeTest, ABufferedBodyMayGoToTheNextNodeAfterAFailedTry) {
  serve(2, 1, std::make_shared<TestPlugin>(TestPlugin::Mode::kBody));
  up_->tries.push_back({.kind = Try::Kind::kWriteFail});
  up_->tries.push_back({.body = {"ok"}});
  down_.body_in = {"data"};
  begin("POST /hello HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->keys.size(), 2u);
  EXPECT_EQ(up_->sent_body, "data");
  EXPECT_EQ(down_.status, 200);
}

TEST_F(ExchangeTest, AbortEndsTheTryAndFreesTheExchangeForTheNextRequest) {
  serve(1, 0);
  up_->stall_body = true;
  up_->tries.push_back({.body = {"a", "b"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);
  EXPECT_TRUE(ex_->active());
  ex_->abort();
  EXPECT_FALSE(ex_->active());
  EXPECT_EQ(up_->released, 1);
  EXPECT_EQ(up_->released_reusable, 0);
  // The same object serves the next request from a clean state.
  up_->stall_body = false;
  up_->tries.push_back({.body = {"again"}});
  down_ = FakeDownstream{};
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.body, "again");
}

}  // namespace
}  // namespace sluice::server
