// proxy-cache's reading of Cache-Control, HTTP dates and the TTL they give.

#include "plugins/proxy_cache/cache_control.h"

#include <gtest/gtest.h>

namespace sluice::plugins::proxy_cache {
namespace {

TEST(ProxyCacheCacheControl, ReadsTheDirectivesAPISIXLooksAt) {
  Directives d;
  parse_directives("public, Max-Age=600, s-maxage=\"30\"", &d);
  EXPECT_EQ(d.max_age, 600);
  EXPECT_EQ(d.s_maxage, 30);
  EXPECT_FALSE(d.no_cache || d.no_store || d.is_private);
  Directives r;
  parse_directives("no-cache", &r);
  parse_directives(" no-store ,private,only-if-cached, min-fresh=5, max-stale", &r);
  EXPECT_TRUE(r.no_cache && r.no_store && r.is_private && r.only_if_cached);
  EXPECT_EQ(r.min_fresh, 5);
  EXPECT_EQ(r.max_stale, Directives::kAny);
  Directives bad;
  parse_directives("max-age=abc, max-stale=7", &bad);
  EXPECT_EQ(bad.max_age, -1);
  EXPECT_EQ(bad.max_stale, 7);
}

TEST(ProxyCacheCacheControl, ReadsTheThreeHttpDateForms) {
  int64_t t = 0;
  ASSERT_TRUE(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &t));
  EXPECT_EQ(t, 784111777);
  ASSERT_TRUE(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT", &t));
  EXPECT_EQ(t, 784111777);
  ASSERT_TRUE(parse_http_date("Sun Nov  6 08:49:37 1994", &t));
  EXPECT_EQ(t, 784111777);
  EXPECT_FALSE(parse_http_date("0", &t));
  EXPECT_FALSE(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT", &t));
}

TEST(ProxyCacheCacheControl, TtlPrefersSMaxageThenMaxAgeThenExpires) {
  Directives d;
  parse_directives("max-age=60, s-maxage=20", &d);
  EXPECT_EQ(resource_ttl(d, "", false, 1000), 20);
  Directives m;
  parse_directives("max-age=60", &m);
  EXPECT_EQ(resource_ttl(m, "Sun, 06 Nov 1994 08:49:37 GMT", true, 0), 60);
  Directives none;
  EXPECT_EQ(resource_ttl(none, "Sun, 06 Nov 1994 08:49:37 GMT", true, 784111777 - 90), 90);
  EXPECT_EQ(resource_ttl(none, "Sun, 06 Nov 1994 08:49:37 GMT", true, 784111777 + 90), 0);
  EXPECT_EQ(resource_ttl(none, "garbage", true, 5), 0);
  EXPECT_EQ(resource_ttl(none, "", false, 5), 0);
}

}  // namespace
}  // namespace sluice::plugins::proxy_cache
