#include "admin/auth.h"

#include <gtest/gtest.h>

namespace sluice::admin {
namespace {

server::AdminRequest request(std::string ip, std::string method = "GET") {
  server::AdminRequest r;
  r.method = std::move(method);
  r.path = "/apisix/admin/routes";
  r.peer_ip = ip;
  EXPECT_TRUE(router::parse_ip(ip, &r.peer));
  return r;
}

Auth make(config::AdminConfig conf) {
  auto a = Auth::create(conf);
  EXPECT_TRUE(a.is_ok()) << a.status().message();
  return std::move(a).value();
}

config::AdminConfig two_keys() {
  config::AdminConfig c;
  c.keys = {{"admin", "admin-key-1", config::AdminRole::kAdmin},
            {"viewer", "viewer-key-1", config::AdminRole::kViewer}};
  c.allow = {"127.0.0.0/24", "10.0.0.0/8"};
  return c;
}

TEST(AuthTest, KeyFromHeaderQueryOrCookie) {
  Auth a = make(two_keys());
  auto r = request("127.0.0.1");
  r.headers = {{"x-api-key", "admin-key-1"}};
  EXPECT_FALSE(a.check(r));
  r.headers.clear();
  r.query = "x=1&api_key=admin-key-1";
  EXPECT_FALSE(a.check(r));
  r.query.clear();
  r.headers = {{"cookie", "a=b; x_api_key=admin-key-1"}};
  EXPECT_FALSE(a.check(r));
}

// APISIX's error_msg and the start of its description, then how to pass a key and where the
// keys are configured; never a key.
TEST(AuthTest, MissingAndWrongKeysGet401WithAPISIXBodies) {
  const std::string hint =
      ": send an admin key in the X-API-KEY header (or as ?api_key=); the keys are "
      "deployment.admin.admin_key in conf/config.yaml, where the shipped file has APISIX's "
      "well-known default key (accepted from loopback clients only)";
  Auth a = make(two_keys());
  auto r = request("127.0.0.1");
  auto denied = a.check(r);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
  EXPECT_EQ(
      denied->body,
      "{\"error_msg\":\"failed to check token\",\"description\":\"missing apikey" + hint + "\"}\n");
  r.headers = {{"x-api-key", "admin-key-2"}};
  denied = a.check(r);
  ASSERT_TRUE(denied);
  EXPECT_EQ(
      denied->body,
      "{\"error_msg\":\"failed to check token\",\"description\":\"wrong apikey" + hint + "\"}\n");
  EXPECT_EQ(denied->body.find(config::kWellKnownAdminKey), std::string::npos);
  EXPECT_EQ(denied->body.find("admin-key-1"), std::string::npos);
  r.headers = {{"x-api-key", "admin-key-1x"}};  // a longer key sharing the prefix
  EXPECT_TRUE(a.check(r));
}

TEST(AuthTest, ViewerMayOnlyGet) {
  Auth a = make(two_keys());
  for (const char* m : {"GET", "PUT", "POST", "PATCH", "DELETE"}) {
    auto r = request("127.0.0.1", m);
    r.headers = {{"x-api-key", "viewer-key-1"}};
    auto denied = a.check(r);
    EXPECT_EQ(denied.has_value(), std::string(m) != "GET") << m;
    if (denied) {
      EXPECT_EQ(denied->status, 401);
      EXPECT_NE(denied->body.find("invalid method for role viewer"), std::string::npos);
    }
  }
}

TEST(AuthTest, AllowAdminIsCheckedBeforeTheKey) {
  Auth a = make(two_keys());
  auto r = request("192.168.1.1");
  r.headers = {{"x-api-key", "admin-key-1"}};
  auto denied = a.check(r);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 403);
  auto inside = request("10.1.2.3");
  inside.headers = {{"x-api-key", "admin-key-1"}};
  EXPECT_FALSE(a.check(inside));
}

TEST(AuthTest, WellKnownKeyOnlyFromLoopback) {
  config::AdminConfig c;  // the defaults: the well-known key, loopback allowed
  c.allow = {"0.0.0.0/0", "::/0"};
  Auth a = make(c);
  auto local = request("127.0.0.1");
  local.headers = {{"x-api-key", std::string(config::kWellKnownAdminKey)}};
  EXPECT_FALSE(a.check(local));
  auto v6 = request("::1");
  v6.headers = local.headers;
  EXPECT_FALSE(a.check(v6));
  auto remote = request("10.0.0.5");
  remote.headers = local.headers;
  auto denied = a.check(remote);
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);
}

TEST(AuthTest, BadAllowAdminEntryIsAStartError) {
  config::AdminConfig c;
  c.allow = {"127.0.0.0/24", "not-a-cidr"};
  auto a = Auth::create(c);
  ASSERT_FALSE(a.is_ok());
  EXPECT_NE(a.status().message().find("deployment.admin.allow_admin[1]"), std::string::npos);
}

TEST(AuthTest, KeysEqualAndQueryParam) {
  EXPECT_TRUE(keys_equal("abc", "abc"));
  EXPECT_FALSE(keys_equal("abc", "abd"));
  EXPECT_FALSE(keys_equal("abc", "ab"));
  EXPECT_EQ(query_param("a=1&b=2", "b").value(), "2");
  EXPECT_EQ(query_param("a=1&ab=2", "b"), std::nullopt);
  EXPECT_EQ(query_param("force", "force").value(), "");
}

}  // namespace
}  // namespace sluice::admin
