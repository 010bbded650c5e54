// apisix.status: the status API's listener, off unless the section is there.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/gateway_config.h"

namespace sluice::config {
namespace {

using ::testing::HasSubstr;

TEST(GatewayStatus, OffUnlessConfigured) {
  auto r = parse_gateway_config("apisix:\n  node_listen: 9080\n", "/etc/sluice");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FALSE(r->status.enabled);
}

TEST(GatewayStatus, DefaultsAndOverrides) {
  auto r = parse_gateway_config("apisix:\n  status: {}\n", "/etc/sluice");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->status.enabled);
  EXPECT_EQ(r->status.addr.ip, "127.0.0.1");
  EXPECT_EQ(r->status.addr.port, 7085);
  r = parse_gateway_config("apisix:\n  status:\n    ip: 0.0.0.0\n    port: 17085\n", "/x");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->status.enabled);
  EXPECT_EQ(r->status.addr.ip, "0.0.0.0");
  EXPECT_EQ(r->status.addr.port, 17085);
}

TEST(GatewayStatus, BadValuesNameTheKey) {
  struct Case {
    const char* yaml;
    const char* key;
  } cases[] = {
      {"apisix:\n  status:\n    port: 0\n", "apisix.status.port"},
      {"apisix:\n  status:\n    port: 70000\n", "apisix.status.port"},
      {"apisix:\n  status:\n    ip: nope\n", "apisix.status.ip"},
      {"apisix:\n  status: 7085\n", "apisix.status"},
  };
  for (const Case& c : cases) {
    auto r = parse_gateway_config(c.yaml, "/etc/sluice");
    ASSERT_FALSE(r.is_ok()) << c.yaml;
    EXPECT_THAT(r.status().message(), HasSubstr(c.key)) << c.yaml;
  }
}

}  // namespace
}  // namespace sluice::config
