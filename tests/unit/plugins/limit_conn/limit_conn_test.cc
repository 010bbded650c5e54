// limit-conn: the node-wide count (exact under threads), the schema's error texts, admission,
// rejection and delay, and the release in the log phase: once per counted request, never for
// one the plugin did not count.

#include "plugins/limit_conn/limit_conn.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::limit_conn {
namespace {

using plugin::Action;
using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

class FakeHost final : public plugin::Host {
 public:
  uint64_t suspend(plugin::Context&) override { return ++suspended; }
  plugin::Context* waiting(uint64_t) override { return nullptr; }
  void resume(uint64_t, Action) override {}
  uint64_t suspended = 0;
};

class LimitConnTest : public ::testing::Test {
 protected:
  LimitConnTest() {
    worker_.loop = &loop_;
    worker_.host = &host_;
    shared_.attr["limit-conn"] = Json{{"local_keys", 1024}};
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
  // A request in flight: its own context, kept until release().
  struct Req {
    router::testing::FakeRequest req{"GET", "/", "example.com", {}, "127.0.0.1"};
    plugin::Context ctx;
  };
  std::unique_ptr<Req> start(const PluginPtr& p, Action* a) {
    auto r = std::make_unique<Req>();
    r->ctx.req = &r->req.head;
    r->ctx.match = r->req.ctx;
    r->ctx.worker = &worker_;
    r->ctx.route_id = "1";
    r->ctx.entry = 64;
    r->ctx.start_ns = plugin::monotonic_ns();
    *a = p->access(r->ctx);
    return r;
  }

  io::EventLoop loop_;
  FakeHost host_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
};

TEST(EnterLeaveTest, ExactUnderThreads) {
  for (int round = 0; round < 20; ++round) {
    uint64_t w = 0;
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 50; ++i) {
          if (enter(&w, 5) != 0) {
            admitted.fetch_add(1);
          }
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(admitted.load(), 5);
    EXPECT_EQ(w, 5u);
    leave(&w);
    EXPECT_EQ(enter(&w, 5), 5u);
  }
}

TEST_F(LimitConnTest, InfoAndPhases) {
  EXPECT_EQ(info().name, "limit-conn");
  EXPECT_EQ(info().priority, 1003);
  PluginPtr p = make(R"({"conn": 1, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->phases(),
            plugin::phase_bit(plugin::Phase::kAccess) | plugin::phase_bit(plugin::Phase::kLog));
}

TEST_F(LimitConnTest, SchemaErrorsAreAPISIXs) {
  EXPECT_EQ(refusal(R"({"burst": 0, "default_conn_delay": 0.1, "key": "remote_addr"})"),
            "property \"conn\" is required");
  EXPECT_EQ(refusal(R"({"conn": 1, "default_conn_delay": 0.1, "key": "remote_addr"})"),
            "property \"burst\" is required");
  EXPECT_EQ(refusal(R"({"conn": 1, "burst": 0, "key": "remote_addr"})"),
            "property \"default_conn_delay\" is required");
  EXPECT_EQ(refusal(R"({"conn": 1, "burst": 0, "default_conn_delay": 0.1})"),
            "property \"key\" is required");
  EXPECT_EQ(refusal(R"({"conn": 0, "burst": 0, "default_conn_delay": 0.1, "key": "a"})"),
            "property \"conn\" validation failed: expected 0 to be greater than 0");
  EXPECT_EQ(refusal(R"({"conn": 1, "burst": 0, "default_conn_delay": 0, "key": "a"})"),
            "property \"default_conn_delay\" validation failed: expected 0 to be greater than 0");
  EXPECT_EQ(refusal(R"({"conn": 1, "burst": 0, "default_conn_delay": 1, "key": "a",
                        "redis_prefix": "a-b"})"),
            "property \"redis_prefix\" validation failed: failed to match pattern "
            "\"^[0-9a-zA-Z|_]+$\" with \"a-b\"");
  EXPECT_EQ(refusal(R"({"conn": 1, "burst": 0, "default_conn_delay": 1, "key": "a",
                        "policy": "redis-cluster", "redis_cluster_nodes": ["127.0.0.1:1"]})"),
            "else clause did not match (property \"redis_cluster_name\" is required)");
}

TEST_F(LimitConnTest, CountsInFlightAndReleasesInTheLogPhase) {
  PluginPtr p = make(
      R"({"conn": 2, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr",
          "rejected_code": 429, "rejected_msg": "busy"})");
  ASSERT_NE(p, nullptr);
  Action a1, a2, a3, a4;
  auto r1 = start(p, &a1);
  auto r2 = start(p, &a2);
  auto r3 = start(p, &a3);
  EXPECT_EQ(a1, Action::kContinue);
  EXPECT_EQ(a2, Action::kContinue);
  EXPECT_EQ(a3, Action::kReply);
  EXPECT_EQ(r3->ctx.reply_status, 429);
  EXPECT_EQ(r3->ctx.reply_body, "{\"error_msg\":\"busy\"}\n");
  // The rejected request's log phase releases nothing.
  p->log(r3->ctx);
  auto r4 = start(p, &a4);
  EXPECT_EQ(a4, Action::kReply);
  // A finished request frees its place, once: a second log call is harmless.
  p->log(r1->ctx);
  p->log(r1->ctx);
  auto r5 = start(p, &a4);
  EXPECT_EQ(a4, Action::kContinue);
  auto r6 = start(p, &a4);
  EXPECT_EQ(a4, Action::kReply);
}

TEST_F(LimitConnTest, OverConnWithinBurstIsDelayed) {
  PluginPtr p = make(
      R"({"conn": 1, "burst": 1, "default_conn_delay": 0.2, "key": "remote_addr",
          "only_use_default_delay": true})");
  ASSERT_NE(p, nullptr);
  const auto& lc = static_cast<const LimitConn&>(*p);
  EXPECT_EQ(lc.delay_ms(1), 0u);
  EXPECT_EQ(lc.delay_ms(2), 200u);
  EXPECT_EQ(lc.delay_ms(3), 400u);
  Action a1, a2, a3;
  auto r1 = start(p, &a1);
  auto r2 = start(p, &a2);
  auto r3 = start(p, &a3);
  EXPECT_EQ(a1, Action::kContinue);
  EXPECT_EQ(a2, Action::kPending);
  EXPECT_EQ(host_.suspended, 1u);
  EXPECT_EQ(a3, Action::kReply);
  // only_use_default_delay: the unit delay never moves.
  p->log(r1->ctx);
  EXPECT_EQ(lc.unit_delay_ns(), 200000000u);
}

TEST_F(LimitConnTest, MeasuredLatencyMovesTheUnitDelay) {
  PluginPtr p = make(R"({"conn": 1, "burst": 1, "default_conn_delay": 1, "key": "remote_addr"})");
  ASSERT_NE(p, nullptr);
  const auto& lc = static_cast<const LimitConn&>(*p);
  Action a;
  auto r = start(p, &a);
  ASSERT_EQ(a, Action::kContinue);
  // Proxied: the upstream's response time (0.2 s) averages with the unit delay (1 s).
  r->ctx.upstream_start_ns = 1000000000;
  r->ctx.upstream_end_ns = 1200000000;
  p->log(r->ctx);
  EXPECT_EQ(lc.unit_delay_ns(), 600000000u);
}

}  // namespace
}  // namespace sluice::plugins::limit_conn
