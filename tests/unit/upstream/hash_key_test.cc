#include "upstream/hash_key.h"

#include <gtest/gtest.h>

#include "unit/router/fake_request.h"
#include "upstream/hash64.h"

namespace sluice::upstream {
namespace {

using router::testing::FakeRequest;

struct KeyCase {
  HashOn on;
  std::string key;
  std::string want;
};

TEST(HashKeyTest, KeyPerHashOn) {
  FakeRequest req("GET", "/p/q?x=7&y=8", "api.example.com",
                  {{"X-User", "alice"}, {"Cookie", "sid=s1; other=o"}}, "10.1.2.3");
  const KeyCase cases[] = {
      {HashOn::kVars, "remote_addr", "10.1.2.3"},
      {HashOn::kVars, "uri", "/p/q"},
      {HashOn::kVars, "request_uri", "/p/q?x=7&y=8"},
      {HashOn::kVars, "arg_x", "7"},
      {HashOn::kVars, "host", "api.example.com"},
      {HashOn::kVars, "http_x_user", "alice"},
      {HashOn::kVars, "cookie_sid", "s1"},
      {HashOn::kHeader, "X-User", "alice"},
      {HashOn::kHeader, "x_user", "alice"},
      {HashOn::kCookie, "other", "o"},
      {HashOn::kVarsCombinations, "$remote_addr$http_x_user", "10.1.2.3alice"},
      {HashOn::kVarsCombinations, "u=${arg_x}-$arg_y", "u=7-8"},
      {HashOn::kVarsCombinations, "$arg_x$arg_missing", "7"},
      // Fallbacks to remote_addr: missing values, unknown variables, no consumer.
      {HashOn::kVars, "arg_missing", "10.1.2.3"},
      {HashOn::kVars, "no_such_var", "10.1.2.3"},
      {HashOn::kHeader, "X-Missing", "10.1.2.3"},
      {HashOn::kCookie, "nope", "10.1.2.3"},
      {HashOn::kConsumer, "", "10.1.2.3"},
      {HashOn::kVarsCombinations, "k-$arg_missing", "10.1.2.3"},
  };
  for (const KeyCase& c : cases) {
    HashKey k = HashKey::compile(c.on, c.key);
    EXPECT_EQ(k.text(req.ctx, ""), c.want) << c.key;
    EXPECT_EQ(k.hash(req.ctx, ""), hash64(c.want)) << c.key;
  }
}

TEST(HashKeyTest, ConsumerName) {
  FakeRequest req("GET", "/", "", {}, "10.1.2.3");
  HashKey k = HashKey::compile(HashOn::kConsumer, "");
  EXPECT_EQ(k.text(req.ctx, "jack"), "jack");
}

TEST(HashKeyTest, DifferentValuesHashApart) {
  FakeRequest a("GET", "/", "", {{"X-User", "alice"}});
  FakeRequest b("GET", "/", "", {{"X-User", "bob"}});
  HashKey k = HashKey::compile(HashOn::kHeader, "X-User");
  EXPECT_NE(k.hash(a.ctx, ""), k.hash(b.ctx, ""));
}

}  // namespace
}  // namespace sluice::upstream
