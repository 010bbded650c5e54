// proxy-cache's conf checks (APISIX's schema and check_schema texts) and config.yaml's
// apisix.proxy_cache section.

#include "plugins/proxy_cache/config.h"

#include <gtest/gtest.h>

namespace sluice::plugins::proxy_cache {
namespace {

using plugin::Json;

std::string refusal(const char* conf) {
  auto s = check(Json::parse(conf), plugin::PluginUse::kHttp);
  return s.is_ok() ? std::string() : s.message();
}

TEST(ProxyCacheConfig, DefaultsAreAPISIXs) {
  set_checked_zones(default_zones());
  auto c = parse(Json::object());
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->strategy, Strategy::kDisk);
  EXPECT_EQ(c->zone, "disk_cache_one");
  EXPECT_EQ(c->cache_key, (std::vector<std::string>{"$host", "$request_uri"}));
  EXPECT_EQ(c->methods, kGet | kHead);
  EXPECT_EQ(c->statuses, (std::vector<int>{200, 301, 404}));
  EXPECT_EQ(c->cache_ttl, 300);
  EXPECT_FALSE(c->hide_cache_headers || c->cache_control);
}

TEST(ProxyCacheConfig, RefusesWithAPISIXsTexts) {
  set_checked_zones(default_zones());
  EXPECT_EQ(refusal(R"({"cache_zone":"nope"})"), "cache_zone nope not found");
  EXPECT_EQ(refusal(R"({"cache_strategy":"memory"})"),
            "invalid or empty cache_zone for cache_strategy: memory");
  EXPECT_EQ(refusal(R"({"cache_key":["$host","$request_method"]})"),
            "cache_key variable $request_method unsupported");
  EXPECT_EQ(refusal(R"({"cache_strategy":"ram"})"),
            R"(property "cache_strategy" validation failed: matches none of the enum values)");
  EXPECT_EQ(refusal(R"({"cache_key":["$"]})"),
            R"X(property "cache_key" validation failed: failed to validate item 1: failed to )X"
            R"X(match pattern "(^[^\$].+$|^\$[0-9a-zA-Z_]+$)" with "$")X");
  EXPECT_EQ(refusal(R"({"cache_key":[]})"),
            R"(property "cache_key" validation failed: expect array to have at least 1 items)");
  EXPECT_EQ(refusal(R"({"cache_http_status":[200,200]})"),
            R"(property "cache_http_status" validation failed: expected unique items but )"
            R"(items 1 and 2 are equal)");
  EXPECT_EQ(refusal(R"({"cache_ttl":0})"),
            R"(property "cache_ttl" validation failed: expected 0 to be at least 1)");
  EXPECT_EQ(refusal(R"({"cache_method":["PUT"]})"),
            R"(property "cache_method" validation failed: failed to validate item 1: matches )"
            R"(none of the enum values)");
  EXPECT_EQ(refusal(R"({"cache_strategy":"memory","cache_zone":"memory_cache"})"), "");
  EXPECT_EQ(refusal(R"({"consumer_isolation":false,"cache_set_cookie":false})"), "");
  EXPECT_NE(refusal(R"({"consumer_isolation":true})").find("not supported"), std::string::npos);
  EXPECT_NE(refusal(R"({"cache_set_cookie":true})").find("not supported"), std::string::npos);
  // Sluice's own: a zone of the other kind.
  EXPECT_NE(refusal(R"({"cache_strategy":"disk","cache_zone":"memory_cache"})"), "");
}

TEST(ProxyCacheConfig, ReadsTheConfigYamlSection) {
  auto j = check_config_section(Json::parse(R"({"cache_ttl":"2m","zones":[
      {"name":"d","memory_size":"10m","disk_size":"1G","disk_path":"/tmp/x","cache_levels":"1:2"},
      {"name":"m","memory_size":"64k"}]})"));
  ASSERT_TRUE(j.is_ok()) << j.status().message();
  auto z = zones_from_json(*j);
  ASSERT_TRUE(z.is_ok());
  EXPECT_EQ(z->cache_ttl, 120);
  ASSERT_EQ(z->zones.size(), 2u);
  EXPECT_EQ(z->zones[0].disk_size, uint64_t{1} << 30);
  EXPECT_EQ(z->zones[0].levels, (std::vector<int>{1, 2}));
  EXPECT_TRUE(z->zones[0].disk());
  EXPECT_EQ(z->zones[1].memory_size, 64u << 10);
  EXPECT_FALSE(z->zones[1].disk());
  EXPECT_FALSE(check_config_section(Json::parse(R"({"zones":[{"name":"a"}]})")).is_ok());
  EXPECT_FALSE(
      check_config_section(Json::parse(R"({"zones":[{"name":"a","memory_size":"10x"}]})")).is_ok());
  EXPECT_FALSE(
      check_config_section(Json::parse(R"({"zones":[{"name":"a","memory_size":1,"disk_path":"/t",
                                    "cache_levels":"3"}]})"))
          .is_ok());
}

}  // namespace
}  // namespace sluice::plugins::proxy_cache
