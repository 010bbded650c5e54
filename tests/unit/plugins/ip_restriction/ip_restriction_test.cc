// ip-restriction's access hook on fake requests: who passes, who gets the answer, and what the
// answer is.

#include "plugins/ip_restriction/ip_restriction.h"

#include <gtest/gtest.h>

#include <string>

#include "unit/router/fake_request.h"

namespace sluice::plugins::ip_restriction {
namespace {

using plugin::Action;
using plugin::Json;

struct Outcome {
  Action action = Action::kContinue;
  int status = 0;
  std::string body;
};

Outcome from(const IpRestriction& p, const char* remote) {
  router::testing::FakeRequest req("GET", "/hello", "foo.com", {}, remote);
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  Outcome o;
  o.action = p.access(ctx);
  o.status = ctx.reply_status;
  o.body = ctx.reply_body;
  return o;
}

IpRestriction make_plugin(const char* conf) {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << conf << ": " << c.status().message();
  return IpRestriction(std::move(c).value());
}

TEST(IpRestriction, RunsInAccess) {
  IpRestriction p = make_plugin(R"({"whitelist": ["127.0.0.1"]})");
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kAccess));
}

TEST(IpRestriction, Whitelist) {
  IpRestriction p = make_plugin(R"({"whitelist": ["127.0.0.1", "113.74.26.106/24"]})");
  EXPECT_EQ(from(p, "127.0.0.1").action, Action::kContinue);
  EXPECT_EQ(from(p, "113.74.26.1").action, Action::kContinue);
  Outcome o = from(p, "127.0.0.2");
  EXPECT_EQ(o.action, Action::kReply);
  EXPECT_EQ(o.status, 403);
  EXPECT_EQ(o.body, "{\"message\":\"Your IP address is not allowed\"}\n");
  EXPECT_EQ(from(p, "::1").action, Action::kReply);
}

TEST(IpRestriction, Blacklist) {
  IpRestriction p = make_plugin(R"({"blacklist": ["10.0.0.0/8", "fe80::/10"]})");
  EXPECT_EQ(from(p, "10.1.2.3").action, Action::kReply);
  EXPECT_EQ(from(p, "fe80::1").action, Action::kReply);
  EXPECT_EQ(from(p, "11.0.0.1").action, Action::kContinue);
  EXPECT_EQ(from(p, "::1").action, Action::kContinue);
}

TEST(IpRestriction, MessageAndResponseCode) {
  IpRestriction p = make_plugin(
      R"({"blacklist": ["127.0.0.1"], "message": "Do you want \"to\" do something bad?",
          "response_code": 404})");
  Outcome o = from(p, "127.0.0.1");
  EXPECT_EQ(o.status, 404);
  EXPECT_EQ(o.body, "{\"message\":\"Do you want \\\"to\\\" do something bad?\"}\n");
}

TEST(IpRestriction, TenThousandEntries) {
  Json list = Json::array();
  for (int i = 0; i < 10000; ++i) {
    list.push_back("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24");
  }
  auto c = parse(Json{{"whitelist", list}});
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->set.size(), 10000u);
  IpRestriction p(std::move(c).value());
  EXPECT_EQ(from(p, "10.0.0.7").action, Action::kContinue);
  EXPECT_EQ(from(p, "10.39.15.200").action, Action::kContinue);  // entry 9999
  EXPECT_EQ(from(p, "10.39.16.1").action, Action::kReply);
}

}  // namespace
}  // namespace sluice::plugins::ip_restriction
