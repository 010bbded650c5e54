// api-breaker: APISIX's schema texts, the breaker's state machine on a fake clock (trips after
// `failures`, break times 2, 4, 8 ... capped by max_breaker_sec, recovery after `successes`),
// its exactness under threads, and the plugin's hooks.

#include "plugins/api_breaker/api_breaker.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::api_breaker {
namespace {

using plugin::Action;
using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

std::string refusal(const char* conf) {
  auto s = info().check(Json::parse(conf), plugin::PluginUse::kHttp);
  return s.is_ok() ? std::string() : s.message();
}

TEST(ApiBreakerConfTest, InfoAndSchema) {
  EXPECT_EQ(info().name, "api-breaker");
  EXPECT_EQ(info().priority, 1005);
  EXPECT_EQ(refusal("{}"), R"(property "break_response_code" is required)");
  EXPECT_EQ(refusal(R"({"break_response_code": 199})"),
            R"(property "break_response_code" validation failed: expected 199 to be at least 200)");
  EXPECT_EQ(refusal(R"({"break_response_code": 502, "max_breaker_sec": 2})"),
            R"(property "max_breaker_sec" validation failed: expected 2 to be at least 3)");
  EXPECT_EQ(
      refusal(R"({"break_response_code": 502, "unhealthy": {"http_statuses": [499]}})"),
      R"(property "unhealthy" validation failed: property "http_statuses" validation failed: failed to validate item 1: expected 499 to be at least 500)");
  EXPECT_EQ(
      refusal(R"({"break_response_code": 502, "unhealthy": {"http_statuses": []}})"),
      R"(property "unhealthy" validation failed: property "http_statuses" validation failed: expect array to have at least 1 items)");
  EXPECT_EQ(
      refusal(R"({"break_response_code": 502, "healthy": {"http_statuses": [200, 200]}})"),
      R"(property "healthy" validation failed: property "http_statuses" validation failed: expected unique items but items 1 and 2 are equal)");
  EXPECT_EQ(
      refusal(R"({"break_response_code": 502, "healthy": {"successes": 0}})"),
      R"(property "healthy" validation failed: property "successes" validation failed: expected 0 to be at least 1)");
  EXPECT_EQ(
      refusal(R"({"break_response_code": 502, "break_response_headers": [{"key": "a"}]})"),
      R"(property "break_response_headers" validation failed: failed to validate item 1: property "value" is required)");
  EXPECT_NE(refusal(R"({"break_response_code": 502, "unhealthy": {"failures": 100000}})"), "");
  EXPECT_EQ(refusal(R"({"break_response_code": 502, "break_response_body": "x",
      "break_response_headers": [{"key": "X-A", "value": "$remote_addr"}], "max_breaker_sec": 30,
      "unhealthy": {"http_statuses": [500, 503], "failures": 3},
      "healthy": {"http_statuses": [200], "successes": 1}})"),
            "");
}

TEST(BreakerTableTest, BreakTimesDoubleUpToTheCap) {
  EXPECT_EQ(BreakerTable::break_seconds(0, true, 300), 2u);
  EXPECT_EQ(BreakerTable::break_seconds(1, false, 300), 2u);
  EXPECT_EQ(BreakerTable::break_seconds(1, true, 300), 4u);
  EXPECT_EQ(BreakerTable::break_seconds(3, false, 300), 8u);
  EXPECT_EQ(BreakerTable::break_seconds(8, false, 300), 256u);
  EXPECT_EQ(BreakerTable::break_seconds(9, false, 300), 300u);
  EXPECT_EQ(BreakerTable::break_seconds(63, false, 300), 300u);
}

TEST(BreakerTableTest, TripsAfterFailuresAndBacksOff) {
  BreakerTable t(64);
  const Rule r{3, 2, 300};
  const uint64_t k = breaker_key(1, "h", "/x");
  uint64_t now = 1000;
  t.unhealthy(k, r, now);
  t.unhealthy(k, r, now);
  EXPECT_FALSE(t.broken(k, r, now));  // 2 of 3
  t.unhealthy(k, r, now);             // trip 1: 2 s
  EXPECT_TRUE(t.broken(k, r, now));
  EXPECT_TRUE(t.broken(k, r, now + 2));  // APISIX: lasttime + breaker_time >= now
  EXPECT_FALSE(t.broken(k, r, now + 3));
  now += 3;
  // Count 4: ceil(4 / 3) = 2, so APISIX reads the last trip's time with a 4 s break: a failure
  // just after a break lengthens it (its quirk, kept).
  t.unhealthy(k, r, now);
  EXPECT_TRUE(t.broken(k, r, now + 1));
  EXPECT_FALSE(t.broken(k, r, now + 2));
  now += 2;
  t.unhealthy(k, r, now);
  t.unhealthy(k, r, now);  // count 6, trip 2: 4 s from now
  EXPECT_TRUE(t.broken(k, r, now + 4));
  EXPECT_FALSE(t.broken(k, r, now + 5));
  now += 5;
  for (int i = 0; i < 3; ++i) {
    t.unhealthy(k, r, now);  // count 9, trip 3: 8 s
  }
  EXPECT_TRUE(t.broken(k, r, now + 8));
  EXPECT_FALSE(t.broken(k, r, now + 9));
  // Other keys are untouched.
  EXPECT_FALSE(t.broken(breaker_key(1, "h", "/y"), r, now));
  EXPECT_FALSE(t.broken(breaker_key(2, "h", "/x"), r, now));
}

TEST(BreakerTableTest, RecoversAfterSuccessesAndAFailureResetsThem) {
  BreakerTable t(64);
  const Rule r{1, 2, 300};
  const uint64_t k = breaker_key(1, "h", "/x");
  t.healthy(k, r);  // no unhealthy count: ignored
  t.unhealthy(k, r, 100);
  EXPECT_TRUE(t.broken(k, r, 100));
  t.healthy(k, r);
  t.unhealthy(k, r, 100);  // the healthy count is dropped; trip 2
  t.healthy(k, r);
  EXPECT_TRUE(t.broken(k, r, 104));
  t.healthy(k, r);  // 2 in a row: clean again
  EXPECT_FALSE(t.broken(k, r, 104));
  t.unhealthy(k, r, 200);  // the back-off starts over at 2 s
  EXPECT_TRUE(t.broken(k, r, 202));
  EXPECT_FALSE(t.broken(k, r, 203));
}

TEST(BreakerTableTest, CappedByMaxBreakerSec) {
  BreakerTable t(64);
  const Rule r{1, 1, 5};
  const uint64_t k = breaker_key(1, "h", "/x");
  for (int i = 0; i < 10; ++i) {
    t.unhealthy(k, r, 50);
  }
  EXPECT_TRUE(t.broken(k, r, 55));
  EXPECT_FALSE(t.broken(k, r, 56));
}

// Four threads count 3000 failures each on one key: the count is exact, so the state has
// tripped exactly 12000 / failures times (the break time says how many, up to the cap).
TEST(BreakerTableTest, ConcurrentFailuresAreCountedExactly) {
  BreakerTable t(64);
  const Rule r{1500, 1, uint64_t{1} << 40};
  const uint64_t k = breaker_key(7, "h", "/x");
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 3000; ++j) {
        t.unhealthy(k, r, 10);
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  // 12000 / 1500 = 8 trips, no partial count: 2^8 = 256 s.
  EXPECT_TRUE(t.broken(k, r, 10 + 256));
  EXPECT_FALSE(t.broken(k, r, 10 + 257));
}

TEST(BreakerTableTest, AFullTableSharesTheOverflowSlot) {
  BreakerTable t(2);
  const Rule r{1, 1, 300};
  for (int i = 0; i < 10; ++i) {
    t.unhealthy(breaker_key(1, "h", "/" + std::to_string(i)), r, 10);
  }
  // Keys beyond the table break together: harder, never softer.
  int broken = 0;
  for (int i = 0; i < 10; ++i) {
    broken += t.broken(breaker_key(1, "h", "/" + std::to_string(i)), r, 10);
  }
  EXPECT_EQ(broken, 10);
}

class ApiBreakerTest : public ::testing::Test {
 protected:
  ApiBreakerTest() {
    worker_.loop = &loop_;
    loop_.update_time();
  }
  PluginPtr make(const char* conf, std::string_view owner = "route/1") {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{owner, shared_});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? *p : nullptr;
  }
  // One request through access and, when it went upstream, header_filter with `status`.
  Action request(const PluginPtr& p, int status, const char* uri = "/hello",
                 const char* host = "127.0.0.1:9080") {
    router::testing::FakeRequest req("GET", uri, host, {{"Host", host}}, "10.0.0.1");
    plugin::Context ctx;
    ctx.req = &req.head;
    ctx.match = req.ctx;
    ctx.worker = &worker_;
    Action a = p->access(ctx);
    last_status_ = ctx.reply_status;
    last_body_ = ctx.reply_body;
    last_headers_.clear();
    ctx.resp.headers.for_each_added([this](std::string_view n, std::string_view v) {
      last_headers_.append(n).append(": ").append(v).append("\n");
    });
    ctx.req = nullptr;  // gone by the response phases, as in the server
    http::ResponseHead head;
    head.status = status;
    if (a == Action::kContinue) {
      ctx.upstream_ip = "127.0.0.1";
      ctx.upstream_resp = &head;
      ctx.status = status;
    } else {
      ctx.status = ctx.reply_status;
    }
    p->header_filter(ctx);
    return a;
  }

  io::EventLoop loop_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
  int last_status_ = 0;
  std::string last_body_, last_headers_;
};

TEST_F(ApiBreakerTest, BreaksAfterFailuresWithTheConfiguredAnswer) {
  PluginPtr p = make(R"({"break_response_code": 502, "break_response_body": "broken",
      "break_response_headers": [{"key": "X-Client", "value": "$remote_addr"}],
      "unhealthy": {"http_statuses": [500, 503], "failures": 3},
      "healthy": {"http_statuses": [200], "successes": 1}})");
  EXPECT_EQ(request(p, 500), Action::kContinue);
  EXPECT_EQ(request(p, 503), Action::kContinue);
  EXPECT_EQ(request(p, 404), Action::kContinue);  // neither list: no change
  EXPECT_EQ(request(p, 500), Action::kContinue);  // the third failure trips it
  EXPECT_EQ(request(p, 200), Action::kReply);
  EXPECT_EQ(last_status_, 502);
  EXPECT_EQ(last_body_, "broken");
  EXPECT_EQ(last_headers_, "X-Client: 10.0.0.1\n");
  // The breaker's own answer does not count as healthy; other uris and hosts are not broken.
  EXPECT_EQ(request(p, 200), Action::kReply);
  EXPECT_EQ(request(p, 200, "/other"), Action::kContinue);
  EXPECT_EQ(request(p, 200, "/hello", "localhost"), Action::kContinue);
  // The port is not part of the host (ngx.var.host) and the case does not matter.
  EXPECT_EQ(request(p, 200, "/hello", "127.0.0.1:1234"), Action::kReply);
}

TEST_F(ApiBreakerTest, NoBodyNoHeaders) {
  PluginPtr p = make(R"({"break_response_code": 503,
      "break_response_headers": [{"key": "X-A", "value": "1"}],
      "unhealthy": {"failures": 1}})");
  request(p, 500);
  EXPECT_EQ(request(p, 200), Action::kReply);
  EXPECT_EQ(last_status_, 503);
  EXPECT_EQ(last_body_, "");
  EXPECT_EQ(last_headers_, "");  // APISIX adds them only with break_response_body
}

TEST_F(ApiBreakerTest, AConfChangeOrAnotherRouteStartsClean) {
  const char* conf = R"({"break_response_code": 502, "unhealthy": {"failures": 1}})";
  PluginPtr p = make(conf);
  request(p, 500);
  EXPECT_EQ(request(p, 200), Action::kReply);
  EXPECT_EQ(request(make(conf), 200), Action::kReply);  // same route, same conf: same state
  EXPECT_EQ(request(make(conf, "route/2"), 200), Action::kContinue);
  EXPECT_EQ(request(make(R"({"break_response_code": 503, "unhealthy": {"failures": 1}})"), 200),
            Action::kContinue);
}

// nginx's $upstream_status is 502/504 when the tries failed: the gateway's answer after them
// counts; its own answers (no upstream tried) do not.
TEST_F(ApiBreakerTest, TheGatewaysAnswerAfterFailedTriesCounts) {
  PluginPtr p = make(R"({"break_response_code": 599, "unhealthy": {"http_statuses": [502],
      "failures": 2}})");
  for (int i = 0; i < 2; ++i) {
    router::testing::FakeRequest req("GET", "/d", "h", {}, "10.0.0.1");
    plugin::Context ctx;
    ctx.req = &req.head;
    ctx.match = req.ctx;
    ctx.worker = &worker_;
    ASSERT_EQ(p->access(ctx), Action::kContinue);
    ctx.req = nullptr;
    ctx.status = 502;
    p->header_filter(ctx);  // no upstream tried (a 502 of the gateway's own): not counted
    ctx.upstream_ip = "127.0.0.1";
    if (i == 1) {
      p->header_filter(ctx);  // only one counted failure so far: not yet
    }
  }
  EXPECT_EQ(request(p, 200, "/d", "h"), Action::kContinue);
  router::testing::FakeRequest req("GET", "/d", "h", {}, "10.0.0.1");
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.worker = &worker_;
  ASSERT_EQ(p->access(ctx), Action::kContinue);
  ctx.upstream_ip = "127.0.0.1";
  ctx.status = 502;
  p->header_filter(ctx);  // the second failed try: trips
  EXPECT_EQ(request(p, 200, "/d", "h"), Action::kReply);
  EXPECT_EQ(last_status_, 599);
}

}  // namespace
}  // namespace sluice::plugins::api_breaker
