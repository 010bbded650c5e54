// limit-req: the bucket's arithmetic against APISIX's (excess, last) formulas, its exactness
// under threads, the schema's error texts, keys and conf identity, and the delay (a suspended
// request resumed by the worker's timer).

#include "plugins/limit_req/limit_req.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::limit_req {
namespace {

using plugin::Action;
using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

// Records what the hooks ask of the worker.
class FakeHost final : public plugin::Host {
 public:
  uint64_t suspend(plugin::Context& ctx) override {
    ctx_ = &ctx;
    return ++suspended;
  }
  plugin::Context* waiting(uint64_t) override { return ctx_; }
  void resume(uint64_t token, Action a) override {
    resumed.push_back({token, a});
    ctx_ = nullptr;
  }
  uint64_t suspended = 0;
  std::vector<std::pair<uint64_t, Action>> resumed;

 private:
  plugin::Context* ctx_ = nullptr;
};

class LimitReqTest : public ::testing::Test {
 protected:
  LimitReqTest() {
    worker_.loop = &loop_;
    worker_.host = &host_;
    shared_.attr["limit-req"] = Json{{"local_keys", 1024}};
    loop_.update_time();
  }

  PluginPtr make(const char* conf, std::string_view owner = "route/1") {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{owner, shared_});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? *p : nullptr;
  }
  std::string refusal(const char* conf) {
    common::Status s = info().check(Json::parse(conf), plugin::PluginUse::kHttp);
    return s.is_ok() ? std::string() : s.message();
  }
  Action hit(const PluginPtr& p, std::string_view remote = "127.0.0.1",
             std::initializer_list<std::pair<std::string_view, std::string_view>> h = {}) {
    router::testing::FakeRequest req("GET", "/hello", "example.com", h, remote);
    ctx_.reset();
    ctx_.req = &req.head;
    ctx_.match = req.ctx;
    ctx_.worker = &worker_;
    ctx_.route_id = "1";
    return p->access(ctx_);
  }

  io::EventLoop loop_;
  FakeHost host_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
  plugin::Context ctx_;
};

TEST(BucketTest, MatchesAPISIXsExcessArithmetic) {
  // rate 1/s, burst 1 (units: ms). APISIX: excess' = max(excess - rate*elapsed + 1000, 0),
  // rejected when excess' > burst*1000, delay excess'/rate.
  Bucket b{1000, 1000};
  uint64_t w = 0;
  EXPECT_EQ(b.incoming(&w, 10000), 0);     // first: excess 0
  EXPECT_EQ(b.incoming(&w, 10000), 1000);  // excess 1000: waits 1 s
  EXPECT_EQ(b.incoming(&w, 10000), -1);    // excess 2000 > 1000
  EXPECT_EQ(b.incoming(&w, 10500), -1);    // 1000 - 500 + 1000 = 1500 > 1000
  EXPECT_EQ(b.incoming(&w, 11000), 1000);  // 1000 - 1000 + 1000 = 1000: admitted, waits 1 s
  EXPECT_EQ(b.incoming(&w, 15000), 0);     // drained: max(..., 0)
}

TEST(BucketTest, BurstZeroAdmitsOnePerInterval) {
  Bucket b{500, 0};  // rate 2/s
  uint64_t w = 0;
  EXPECT_EQ(b.incoming(&w, 1000), 0);
  EXPECT_EQ(b.incoming(&w, 1499), -1);
  EXPECT_EQ(b.incoming(&w, 1500), 0);
  EXPECT_EQ(b.incoming(&w, 1700), -1);
  EXPECT_EQ(b.incoming(&w, 2000), 0);
}

// Many threads at one instant: exactly burst + 1 admitted, whatever the interleaving.
TEST(BucketTest, ExactUnderThreads) {
  for (int round = 0; round < 20; ++round) {
    Bucket b{1000000, 7000000};  // burst 7
    uint64_t w = 0;
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          if (b.incoming(&w, 5000000000) >= 0) {
            admitted.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(admitted.load(), 8);
  }
}

TEST_F(LimitReqTest, InfoAndPhases) {
  EXPECT_EQ(info().name, "limit-req");
  EXPECT_EQ(info().priority, 1001);
  PluginPtr p = make(R"({"rate": 1, "burst": 0, "key": "remote_addr"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->phases(), plugin::phase_bit(plugin::Phase::kAccess));
}

TEST_F(LimitReqTest, SchemaErrorsAreAPISIXs) {
  EXPECT_EQ(refusal(R"({"burst": 0, "key": "remote_addr"})"), "property \"rate\" is required");
  EXPECT_EQ(refusal(R"({"rate": 1, "key": "remote_addr"})"), "property \"burst\" is required");
  EXPECT_EQ(refusal(R"({"rate": 1, "burst": 0})"), "property \"key\" is required");
  EXPECT_EQ(refusal(R"({"rate": 0, "burst": 0, "key": "remote_addr"})"),
            "property \"rate\" validation failed: expected 0 to be greater than 0");
  EXPECT_EQ(refusal(R"({"rate": 1, "burst": -1, "key": "remote_addr"})"),
            "property \"burst\" validation failed: expected -1 to be at least 0");
  EXPECT_EQ(refusal(R"({"rate": 1, "burst": 0, "key": "remote_addr", "rejected_code": 600})"),
            "property \"rejected_code\" validation failed: expected 600 to be at most 599");
  EXPECT_EQ(refusal(R"({"rate": 1, "burst": 0, "key": "a", "policy": "redis"})"),
            "then clause did not match (property \"redis_host\" is required)");
  EXPECT_EQ(refusal(R"({"rate": 1, "burst": 0, "key": "a", "rules": []})"),
            "rules: not supported by Sluice yet");
  EXPECT_EQ(refusal(R"({"rate": 0.5, "burst": 0.5, "key": "remote_addr"})"), "");
}

TEST_F(LimitReqTest, NodelayAdmitsTheBurstAtOnceThenRejects) {
  PluginPtr p = make(
      R"({"rate": 1, "burst": 2, "key": "remote_addr", "nodelay": true, "rejected_code": 429,
          "rejected_msg": "slow down"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p), Action::kReply);
  EXPECT_EQ(ctx_.reply_status, 429);
  EXPECT_EQ(ctx_.reply_body, "{\"error_msg\":\"slow down\"}\n");
  // Another key has its own bucket.
  EXPECT_EQ(hit(p, "10.0.0.2"), Action::kContinue);
  EXPECT_EQ(host_.suspended, 0u);
}

TEST_F(LimitReqTest, WithinTheBurstTheRequestWaitsOnTheLoop) {
  PluginPtr p = make(R"({"rate": 10, "burst": 1, "key": "remote_addr"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p), Action::kPending);  // waits 100 ms
  EXPECT_EQ(host_.suspended, 1u);
  EXPECT_TRUE(host_.resumed.empty());
  uint64_t start = loop_.now_ms();
  while (host_.resumed.empty() && loop_.now_ms() < start + 1000) {
    loop_.timers().run_due(loop_.now_ms());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    loop_.update_time();
  }
  ASSERT_EQ(host_.resumed.size(), 1u);
  EXPECT_EQ(host_.resumed[0].second, Action::kContinue);
  EXPECT_GE(loop_.now_ms() - start, 80u);
}

TEST_F(LimitReqTest, DefaultRejectionIs503WithoutBody) {
  PluginPtr p = make(R"({"rate": 1, "burst": 0, "key": "remote_addr"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p), Action::kContinue);
  EXPECT_EQ(hit(p), Action::kReply);
  EXPECT_EQ(ctx_.reply_status, 503);
  EXPECT_EQ(ctx_.reply_body, "");
}

TEST_F(LimitReqTest, KeysAndConfIdentity) {
  const char* conf = R"({"rate": 1, "burst": 0, "key": "http_x_user", "nodelay": true})";
  PluginPtr a = make(conf);
  PluginPtr same = make(conf);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(hit(a, "1.1.1.1", {{"X-User", "u1"}}), Action::kContinue);
  EXPECT_EQ(hit(same, "2.2.2.2", {{"X-User", "u1"}}), Action::kReply);  // same key, same bucket
  EXPECT_EQ(hit(a, "1.1.1.1", {{"X-User", "u2"}}), Action::kContinue);
  // Absent header: the client address.
  EXPECT_EQ(hit(a, "3.3.3.3"), Action::kContinue);
  EXPECT_EQ(hit(a, "3.3.3.3"), Action::kReply);
  // Another route, or a changed conf, starts afresh (APISIX keys by route and conf version).
  EXPECT_EQ(hit(make(conf, "route/2"), "1.1.1.1", {{"X-User", "u1"}}), Action::kContinue);
  PluginPtr changed = make(
      R"({"rate": 1, "burst": 0, "key": "http_x_user", "nodelay": true, "rejected_code": 429})");
  EXPECT_EQ(hit(changed, "1.1.1.1", {{"X-User", "u1"}}), Action::kContinue);
  // var_combination and constant.
  PluginPtr combo = make(
      R"({"rate": 1, "burst": 0, "key_type": "var_combination", "key": "$remote_addr $http_x_user"})");
  EXPECT_EQ(hit(combo, "1.1.1.1", {{"X-User", "u1"}}), Action::kContinue);
  EXPECT_EQ(hit(combo, "1.1.1.1", {{"X-User", "u2"}}), Action::kContinue);
  EXPECT_EQ(hit(combo, "1.1.1.1", {{"X-User", "u1"}}), Action::kReply);
  PluginPtr constant = make(R"({"rate": 1, "burst": 0, "key_type": "constant", "key": "all"})");
  EXPECT_EQ(hit(constant, "1.1.1.1"), Action::kContinue);
  EXPECT_EQ(hit(constant, "2.2.2.2"), Action::kReply);
}

TEST_F(LimitReqTest, UnresolvableRedisFailsOrDegrades) {
  PluginPtr p = make(
      R"({"rate": 1, "burst": 0, "key": "remote_addr", "policy": "redis",
          "redis_host": "no-such-host.invalid"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p), Action::kReply);
  EXPECT_EQ(ctx_.reply_status, 500);
  PluginPtr soft = make(
      R"({"rate": 1, "burst": 0, "key": "remote_addr", "policy": "redis",
          "redis_host": "no-such-host.invalid", "allow_degradation": true})");
  EXPECT_EQ(hit(soft), Action::kContinue);
}

}  // namespace
}  // namespace sluice::plugins::limit_req
