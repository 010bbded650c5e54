// ua-restriction's access hook on fake requests: allowlist, denylist, a missing User-Agent,
// several User-Agent fields, and one proxy-rewrite changed.

#include "plugins/ua_restriction/ua_restriction.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "unit/router/fake_request.h"

namespace sluice::plugins::ua_restriction {
namespace {

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;

UaRestriction make_plugin(const char* conf) {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << conf << ": " << c.status().message();
  return UaRestriction(std::move(c).value());
}

// The status the client gets; 0 when the request goes on.
int status(const UaRestriction& p, Headers headers, std::string* body = nullptr) {
  router::testing::FakeRequest req("GET", "/hello", "foo.com", headers);
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  Action a = p.access(ctx);
  if (body != nullptr) {
    *body = ctx.reply_body;
  }
  return a == Action::kReply ? ctx.reply_status : 0;
}

TEST(UaRestriction, Denylist) {
  UaRestriction p =
      make_plugin(R"J({"denylist": ["my-bot2", "(Twitterspider)/(\\d+)\\.(\\d+)"]})J");
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kAccess));
  EXPECT_EQ(status(p, {{"User-Agent", "curl/8.0"}}), 0);
  std::string body;
  EXPECT_EQ(status(p, {{"User-Agent", "Twitterspider/2.0"}}, &body), 403);
  EXPECT_EQ(body, "{\"message\":\"Not allowed\"}\n");
  // A search, not a whole match; case-sensitive.
  EXPECT_EQ(status(p, {{"User-Agent", "Mozilla my-bot2 x"}}), 403);
  EXPECT_EQ(status(p, {{"user-agent", "MY-BOT2"}}), 0);
  EXPECT_EQ(status(p, {{"User-Agent", "Twitterspider/x"}}), 0);
}

TEST(UaRestriction, Allowlist) {
  UaRestriction p = make_plugin(R"J({"allowlist": ["^my-bot1$", "(Baiduspider)/(\\d+)"]})J");
  EXPECT_EQ(status(p, {{"User-Agent", "my-bot1"}}), 0);
  EXPECT_EQ(status(p, {{"User-Agent", "Baiduspider/3.0"}}), 0);
  EXPECT_EQ(status(p, {{"User-Agent", "my-bot2"}}), 403);
  // Whitespace at both ends is stripped before the search, as pl.stringx.strip does.
  EXPECT_TRUE(p.matches(" \tmy-bot1\v "));
  EXPECT_EQ(status(p, {{"User-Agent", ""}}), 403);  // present but empty: not missing
}

TEST(UaRestriction, MissingUserAgent) {
  EXPECT_EQ(status(make_plugin(R"J({"denylist": ["x"]})J"), {}), 403);
  EXPECT_EQ(status(make_plugin(R"J({"allowlist": ["x"], "bypass_missing": true})J"), {}), 0);
  std::string body;
  EXPECT_EQ(status(make_plugin(R"J({"denylist": ["x"], "message": "who are you"})J"), {}, &body),
            403);
  EXPECT_EQ(body, "{\"message\":\"who are you\"}\n");
}

TEST(UaRestriction, SeveralUserAgentFields) {
  UaRestriction deny = make_plugin(R"J({"denylist": ["bad"]})J");
  EXPECT_EQ(status(deny, {{"User-Agent", "good"}, {"User-Agent", "bad"}}), 403);
  EXPECT_EQ(status(deny, {{"User-Agent", "bad"}, {"User-Agent", "bad"}}), 403);
  EXPECT_EQ(status(deny, {{"User-Agent", "good"}, {"User-Agent", "fine"}}), 0);
  UaRestriction allow = make_plugin(R"J({"allowlist": ["good"]})J");
  EXPECT_EQ(status(allow, {{"User-Agent", "other"}, {"User-Agent", "good"}}), 0);
  EXPECT_EQ(status(allow, {{"User-Agent", "other"}, {"User-Agent", "else"}}), 403);
}

TEST(UaRestriction, ReadsTheUserAgentAsRewritten) {
  UaRestriction p = make_plugin(R"J({"denylist": ["bad"]})J");
  router::testing::FakeRequest req("GET", "/hello", "foo.com", {{"User-Agent", "bad"}});
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.upstream.headers.set("User-Agent", "good");
  EXPECT_EQ(p.access(ctx), Action::kContinue);
  ctx.upstream.headers.set("User-Agent", "bad too");
  EXPECT_EQ(p.access(ctx), Action::kReply);
  ctx.upstream.headers.remove("User-Agent");
  ctx.reply_status = 0;
  EXPECT_EQ(p.access(ctx), Action::kReply);  // removed: missing, no bypass
}

}  // namespace
}  // namespace sluice::plugins::ua_restriction
