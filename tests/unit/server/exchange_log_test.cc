// The access log's line for every way an exchange ends, once: a gateway-made answer, a proxied
// response, failed tries then an answer, a plugin's refusal, a client gone mid-response and
// one gone before any answer (499).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "unit/server/exchange_fakes.h"

namespace sluice::server {
namespace {

std::shared_ptr<Settings> settings_with_log(const std::string& path) {
  auto s = std::make_shared<Settings>();
  auto log = std::make_shared<accesslog::Config>();
  log->path = path;
  log->format = *accesslog::Format::compile(
      "$status $upstream_addr $upstream_status $body_bytes_sent $request_length",
      accesslog::Escape::kDefault);
  s->access_log = std::move(log);
  return s;
}

class ExchangeLogTest : public ExchangeTest {
 protected:
  ExchangeLogTest() : ExchangeTest(settings_with_log(log_path())) {}
  ~ExchangeLogTest() override { std::remove(path_.c_str()); }

  static std::string log_path() {
    return ::testing::TempDir() + "exchange_log_test." + std::to_string(getpid());
  }

  // The lines written so far.
  std::vector<std::string> lines() {
    worker_.access_log()->flush();
    std::vector<std::string> out;
    std::ifstream in(path_);
    for (std::string l; std::getline(in, l);) {
      out.push_back(l);
    }
    return out;
  }

  std::string path_ = log_path();
};

TEST_F(ExchangeLogTest, GatewayAnswersAndProxiedResponses) {
  serve(1, 0);
  begin("GET /other HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  up_->tries.push_back({.body = {"hello ", "world"}});
  down_ = FakeDownstream{};
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");  // 32 bytes
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(lines(), (std::vector<std::string>{"404 - - 36 32", "200 127.0.0.1:9001 200 11 32"}));
}

TEST_F(ExchangeLogTest, EveryTryIsListed) {
  serve(3, 2);
  up_->tries.push_back({.kind = Try::Kind::kRefused});
  up_->tries.push_back({.kind = Try::Kind::kConnectFail});
  up_->tries.push_back({.status = 503});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  ASSERT_EQ(lines().size(), 1u);
  std::string want_addrs = up_->keys[0] + ", " + up_->keys[1] + ", " + up_->keys[2];
  EXPECT_EQ(lines()[0], "503 " + want_addrs + " 502, 502, 503 0 32");
}

TEST_F(ExchangeLogTest, APluginsRefusalIsLoggedOnce) {
  serve(1, 0, std::make_shared<TestPlugin>(TestPlugin::Mode::kReject));
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  ex_.reset();  // the end of the exchange's life logs nothing more
  EXPECT_EQ(lines(), (std::vector<std::string>{"429 - - 26 32"}));
}

TEST_F(ExchangeLogTest, AClientGoneBeforeTheAnswerIs499Once) {
  serve(1, 0);
  up_->stall_body = true;
  up_->tries.push_back({.body = {"a", "b"}});
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);  // the response started: its status is logged
  ex_->abort();
  auto suspended = std::make_shared<TestPlugin>(TestPlugin::Mode::kSuspend);
  serve(1, 0, suspended);
  down_ = FakeDownstream{};
  begin("GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kWait);  // waiting on the plugin: no answer yet
  ex_->abort();
  ex_->abort();
  ex_.reset();
  EXPECT_EQ(lines(), (std::vector<std::string>{"200 127.0.0.1:9001 200 1 32", "499 - - 0 32"}));
}

}  // namespace
}  // namespace sluice::server
