// referer-restriction's conf texts and its access hook on fake requests.

#include "plugins/referer_restriction/referer_restriction.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "unit/router/fake_request.h"

namespace sluice::plugins::referer_restriction {
namespace {

using plugin::Action;
using plugin::Json;

struct ConfCase {
  const char* conf;
  const char* error;  // "" when the conf is valid
};

TEST(RefererRestrictionConfig, Texts) {
  EXPECT_EQ(info().name, "referer-restriction");
  EXPECT_EQ(info().priority, 2990);
  EXPECT_EQ(Json::parse(info().schema)["properties"]["message"]["default"],
            "Your referer host is not allowed");
  for (const ConfCase& c : std::initializer_list<ConfCase>{
           {R"({"whitelist": ["xx.com", "*.xx.com", "a_b.c-d"]})", ""},
           {R"({"blacklist": ["*.evil.com"], "bypass_missing": true, "message": "no"})", ""},
           {R"({})", "value should match only one schema, but matches none"},
           {R"({"whitelist": ["a.com"], "blacklist": ["b.com"]})",
            "value should match only one schema, but matches both schemas 1 and 2"},
           {R"({"whitelist": []})",
            R"(property "whitelist" validation failed: expect array to have at least 1 items)"},
           {R"({"whitelist": ["a.com", "a b"]})",
            R"(property "whitelist" validation failed: failed to validate item 2: failed to )"
            R"(match pattern "^\*?[0-9a-zA-Z-._]+$" with "a b")"},
           {R"({"blacklist": ["*"]})",
            R"(property "blacklist" validation failed: failed to validate item 1: failed to )"
            R"(match pattern "^\*?[0-9a-zA-Z-._]+$" with "*")"},
           {R"({"blacklist": ["a.*.com"]})",
            R"(property "blacklist" validation failed: failed to validate item 1: failed to )"
            R"(match pattern "^\*?[0-9a-zA-Z-._]+$" with "a.*.com")"},
           {R"({"blacklist": [1]})",
            R"(property "blacklist" validation failed: failed to validate item 1: wrong type: )"
            R"(expected string, got number)"},
           {R"({"whitelist": ["a.com"], "bypass_missing": 1})",
            R"(property "bypass_missing" validation failed: wrong type: expected boolean, got )"
            R"(number)"},
           {R"({"whitelist": ["a.com"], "message": ""})",
            R"(property "message" validation failed: string too short, expected at least 1, )"
            R"(got 0)"},
       }) {
    EXPECT_EQ(check(Json::parse(c.conf), plugin::PluginUse::kHttp).message(), c.error) << c.conf;
  }
}

RefererRestriction make_plugin(const char* conf) {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << conf << ": " << c.status().message();
  return RefererRestriction(std::move(c).value());
}

// The status the client gets for a request with this Referer (nullptr: none); 0 when it goes
// on.
int status(const RefererRestriction& p, const char* referer, std::string* body = nullptr) {
  router::testing::FakeRequest req("GET", "/hello", "foo.com");
  if (referer != nullptr) {
    req.head.headers[req.head.num_headers++] = http::Header{"Referer", referer};
  }
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  Action a = p.access(ctx);
  if (body != nullptr) {
    *body = ctx.reply_body;
  }
  return a == Action::kReply ? ctx.reply_status : 0;
}

TEST(RefererRestriction, Whitelist) {
  RefererRestriction p = make_plugin(R"({"whitelist": ["xx.com", "*.xx.com"]})");
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kAccess));
  EXPECT_EQ(status(p, "http://xx.com/x"), 0);
  EXPECT_EQ(status(p, "https://a.xx.com/x"), 0);
  std::string body;
  EXPECT_EQ(status(p, "http://yy.com/x", &body), 403);
  EXPECT_EQ(body, "{\"message\":\"Your referer host is not allowed\"}\n");
  EXPECT_EQ(status(p, nullptr), 403);
  EXPECT_EQ(status(p, "not a url"), 403);  // malformed: as missing
}

TEST(RefererRestriction, Blacklist) {
  RefererRestriction p = make_plugin(R"({"blacklist": ["*.evil.com"], "message": "bye"})");
  EXPECT_EQ(status(p, "http://xx.com/x"), 0);
  std::string body;
  EXPECT_EQ(status(p, "http://www.evil.com/", &body), 403);
  EXPECT_EQ(body, "{\"message\":\"bye\"}\n");
  EXPECT_EQ(status(p, "http://evil.com/"), 0);
  EXPECT_EQ(status(p, nullptr), 403);  // bypass_missing defaults to false
}

TEST(RefererRestriction, BypassMissing) {
  RefererRestriction p = make_plugin(R"({"whitelist": ["xx.com"], "bypass_missing": true})");
  EXPECT_EQ(status(p, nullptr), 0);
  EXPECT_EQ(status(p, "garbage"), 0);
  EXPECT_EQ(status(p, "http://yy.com"), 403);
}

TEST(RefererRestriction, ReadsTheRefererAsRewritten) {
  RefererRestriction p = make_plugin(R"({"whitelist": ["xx.com"]})");
  router::testing::FakeRequest req("GET", "/hello", "foo.com", {{"Referer", "http://yy.com/"}});
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.upstream.headers.set("Referer", "http://xx.com/");
  EXPECT_EQ(p.access(ctx), Action::kContinue);
}

}  // namespace
}  // namespace sluice::plugins::referer_restriction
