// fault-injection: APISIX's schema texts, abort replies with `$var`s, percentage sampling, vars,
// and the delay, which suspends the request on a timer of the worker's loop.

#include "plugins/fault_injection/fault_injection.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::fault_injection {
namespace {

using plugin::Action;
using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

// A worker's Host that records suspensions and resumptions.
class FakeHost final : public plugin::Host {
 public:
  uint64_t suspend(plugin::Context& ctx) override {
    waiting_[++next_] = &ctx;
    return next_;
  }
  plugin::Context* waiting(uint64_t token) override {
    auto it = waiting_.find(token);
    return it == waiting_.end() ? nullptr : it->second;
  }
  void resume(uint64_t token, Action a) override {
    resumed.push_back({token, a});
    waiting_.erase(token);
  }
  void gone(uint64_t token) { waiting_.erase(token); }
  std::vector<std::pair<uint64_t, Action>> resumed;

 private:
  uint64_t next_ = 0;
  std::unordered_map<uint64_t, plugin::Context*> waiting_;
};

class FaultInjectionTest : public ::testing::Test {
 protected:
  FaultInjectionTest() {
    worker_.loop = &loop_;
    worker_.host = &host_;
    loop_.update_time();
  }
  PluginPtr make(const char* conf) {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared_});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? *p : nullptr;
  }
  std::string refusal(const char* conf) {
    auto s = info().check(Json::parse(conf), plugin::PluginUse::kHttp);
    return s.is_ok() ? std::string() : s.message();
  }
  // Runs the rewrite hook for one request in `ctx_` (kept for later inspection).
  Action hit(const PluginPtr& p, const char* target = "/hello",
             std::initializer_list<std::pair<std::string_view, std::string_view>> headers = {}) {
    req_ = std::make_unique<router::testing::FakeRequest>("GET", target, "example.com", headers,
                                                          "10.0.0.7");
    ctx_ = std::make_unique<plugin::Context>();
    ctx_->req = &req_->head;
    ctx_->match = req_->ctx;
    ctx_->worker = &worker_;
    return p->rewrite(*ctx_);
  }
  void advance(uint64_t ms) { loop_.timers().run_due(loop_.now_ms() + ms); }

  io::EventLoop loop_;
  FakeHost host_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
  std::unique_ptr<router::testing::FakeRequest> req_;
  std::unique_ptr<plugin::Context> ctx_;
};

TEST_F(FaultInjectionTest, InfoAndSchema) {
  EXPECT_EQ(info().name, "fault-injection");
  EXPECT_EQ(info().priority, 11000);
  EXPECT_EQ(refusal("{}"), "expect object to have at least 1 properties");
  EXPECT_EQ(refusal(R"({"abort": {}})"),
            R"(property "abort" validation failed: property "http_status" is required)");
  EXPECT_EQ(
      refusal(R"({"abort": {"http_status": 100, "body": "x"}})"),
      R"(property "abort" validation failed: property "http_status" validation failed: expected 100 to be at least 200)");
  EXPECT_EQ(refusal(R"({"delay": {}})"),
            R"(property "delay" validation failed: property "duration" is required)");
  EXPECT_EQ(
      refusal(R"({"delay": {"duration": "test"}})"),
      R"(property "delay" validation failed: property "duration" validation failed: wrong type: expected number, got string)");
  EXPECT_EQ(
      refusal(R"({"delay": {"duration": -1}})"),
      R"(property "delay" validation failed: property "duration" validation failed: expected -1 to be at least 0)");
  EXPECT_EQ(
      refusal(R"({"abort": {"http_status": 403, "percentage": 101}})"),
      R"(property "abort" validation failed: property "percentage" validation failed: expected 101 to be at most 100)");
  EXPECT_EQ(
      refusal(R"({"abort": {"http_status": 403, "vars": "x"}})"),
      R"(property "abort" validation failed: property "vars" validation failed: wrong type: expected array, got string)");
  EXPECT_NE(refusal(R"({"abort": {"http_status": 403, "vars": [[["arg_name", "=~=", "x"]]]}})"),
            "");
  EXPECT_NE(refusal(R"({"abort": {"http_status": 403, "headers": {}}})"), "");
  EXPECT_NE(refusal(R"({"abort": {"http_status": 403, "headers": {"a:b": "1"}}})"), "");
  EXPECT_EQ(refusal(R"({"abort": {"http_status": 403, "body": "x", "headers": {"X-A": 1}},
                       "delay": {"duration": 0.5, "percentage": 50, "vars": [[["arg_a", "==", "1"]]]}})"),
            "");
}

TEST_F(FaultInjectionTest, AbortRepliesWithVarsInBodyAndHeaders) {
  PluginPtr p = make(R"({"abort": {"http_status": 403, "body": "client addr: $remote_addr\n",
                                   "headers": {"X-Client": "$remote_addr", "X-Num": 7}}})");
  EXPECT_EQ(hit(p), Action::kReply);
  EXPECT_EQ(ctx_->reply_status, 403);
  EXPECT_EQ(ctx_->reply_body, "client addr: 10.0.0.7\n");
  const std::string* v = nullptr;
  ASSERT_TRUE(ctx_->resp.headers.lookup("X-Client", &v));
  EXPECT_EQ(*v, "10.0.0.7");
  ASSERT_TRUE(ctx_->resp.headers.lookup("X-Num", &v));
  EXPECT_EQ(*v, "7");
  EXPECT_TRUE(host_.resumed.empty());
}

TEST_F(FaultInjectionTest, AbortWithoutBodyRepliesEmpty) {
  PluginPtr p = make(R"({"abort": {"http_status": 200}})");
  EXPECT_EQ(hit(p), Action::kReply);
  EXPECT_EQ(ctx_->reply_status, 200);
  EXPECT_EQ(ctx_->reply_body, "");
}

TEST_F(FaultInjectionTest, PercentageSamples) {
  EXPECT_TRUE(FaultInjection::sample_hit(-1));
  int hits0 = 0, hits100 = 0, hits30 = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    hits0 += FaultInjection::sample_hit(0);
    hits100 += FaultInjection::sample_hit(100);
    hits30 += FaultInjection::sample_hit(30);
  }
  EXPECT_EQ(hits0, 0);
  EXPECT_EQ(hits100, n);
  // 6000 expected; sd = sqrt(n * .3 * .7) = 65: +-400 is over 6 sd.
  EXPECT_NEAR(hits30, 6000, 400);

  PluginPtr p = make(R"({"abort": {"http_status": 403, "percentage": 50}})");
  int replies = 0;
  for (int i = 0; i < 2000; ++i) {
    replies += hit(p) == Action::kReply;
  }
  EXPECT_NEAR(replies, 1000, 150);
}

// APISIX's documented vars: expressions of one entry are ANDed, entries are ORed.
TEST_F(FaultInjectionTest, VarsNarrowTheFault) {
  PluginPtr p = make(R"({"abort": {"http_status": 403, "body": "Fault Injection!\n",
      "vars": [[["arg_name", "==", "jack"], ["arg_age", "==", 18]], [["arg_name2", "==", "allen"]]]}})");
  EXPECT_EQ(hit(p, "/hello?name=allen"), Action::kContinue);
  EXPECT_EQ(hit(p, "/hello?name=jack"), Action::kContinue);
  EXPECT_EQ(hit(p, "/hello?name=jack&age=18"), Action::kReply);
  EXPECT_EQ(hit(p, "/hello?name2=allen"), Action::kReply);
  PluginPtr empty = make(R"({"abort": {"http_status": 403, "vars": []}})");
  EXPECT_EQ(hit(empty), Action::kContinue);  // APISIX: no expression matched
}

TEST_F(FaultInjectionTest, DelaySuspendsUntilTheTimerFires) {
  PluginPtr p = make(R"({"delay": {"duration": 0.25}})");
  ASSERT_EQ(hit(p), Action::kPending);
  advance(249);
  EXPECT_TRUE(host_.resumed.empty());
  advance(250);
  ASSERT_EQ(host_.resumed.size(), 1u);
  EXPECT_EQ(host_.resumed[0].second, Action::kContinue);
}

TEST_F(FaultInjectionTest, DelayThenAbort) {
  PluginPtr p =
      make(R"({"abort": {"http_status": 403, "body": "late"}, "delay": {"duration": 1}})");
  ASSERT_EQ(hit(p), Action::kPending);
  advance(1000);
  ASSERT_EQ(host_.resumed.size(), 1u);
  EXPECT_EQ(host_.resumed[0].second, Action::kReply);
  EXPECT_EQ(ctx_->reply_status, 403);
  EXPECT_EQ(ctx_->reply_body, "late");
}

TEST_F(FaultInjectionTest, DelayVarsAndZeroDuration) {
  PluginPtr p = make(R"({"delay": {"duration": 2, "vars": [[["http_age", "==", "18"]]]}})");
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p, "/hello", {{"Age", "18"}}), Action::kPending);
  PluginPtr zero = make(R"({"delay": {"duration": 0}})");
  EXPECT_EQ(hit(zero), Action::kContinue);
}

TEST_F(FaultInjectionTest, AGoneRequestIsNotResumedAndTimersAreReused) {
  PluginPtr p = make(R"({"delay": {"duration": 0.1}})");
  ASSERT_EQ(hit(p), Action::kPending);
  host_.gone(1);
  advance(100);
  EXPECT_TRUE(host_.resumed.empty());
  ASSERT_EQ(hit(p), Action::kPending);
  advance(100);
  ASSERT_EQ(host_.resumed.size(), 1u);
  EXPECT_EQ(host_.resumed[0].first, 2u);
}

}  // namespace
}  // namespace sluice::plugins::fault_injection
