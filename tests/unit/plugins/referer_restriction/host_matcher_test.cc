// HostMatcher and the Referer's host as lua-resty-http's parse_uri reads it.

#include "plugins/referer_restriction/host_matcher.h"

#include <gtest/gtest.h>

#include <string>

#include "plugins/referer_restriction/referer_host.h"

namespace sluice::plugins::referer_restriction {
namespace {

HostMatcher matcher_of(std::initializer_list<const char*> patterns) {
  HostMatcher m;
  for (const char* p : patterns) {
    m.add(p);
  }
  return m;
}

TEST(HostMatcher, ExactAndWildcard) {
  HostMatcher m = matcher_of({"xx.com", "*.xx.com", "*.b.yy.com", "*zz.org"});
  EXPECT_TRUE(m.matches("xx.com"));
  EXPECT_TRUE(m.matches("a.xx.com"));
  EXPECT_TRUE(m.matches("a.b.xx.com"));
  EXPECT_FALSE(m.matches("yy.com"));
  EXPECT_FALSE(m.matches("b.yy.com"));
  EXPECT_TRUE(m.matches("a.b.yy.com"));
  EXPECT_FALSE(m.matches("xx.com.evil"));
  EXPECT_FALSE(m.matches("xxx.com"));
  // The text after '*' only has to end the host, as APISIX's has_suffix.
  EXPECT_TRUE(m.matches("badzz.org"));
  EXPECT_TRUE(m.matches("zz.org"));
  // Case-sensitive, as in APISIX.
  EXPECT_FALSE(m.matches("XX.com"));
  EXPECT_FALSE(m.matches(""));
}

TEST(HostMatcher, TenThousandNames) {
  HostMatcher m;
  for (int i = 0; i < 10000; ++i) {
    m.add("h" + std::to_string(i) + ".example.com");
    m.add("*.w" + std::to_string(i) + ".example.org");
  }
  EXPECT_TRUE(m.matches("h9999.example.com"));
  EXPECT_TRUE(m.matches("a.w42.example.org"));
  EXPECT_FALSE(m.matches("h10000.example.com"));
  EXPECT_FALSE(m.matches("w42.example.org"));
}

std::string host_of(std::string_view referer) {
  std::string_view h;
  return referer_host(referer, &h) ? std::string(h) : "(none)";
}

TEST(RefererHost, AsParseUriReadsIt) {
  EXPECT_EQ(host_of("http://xx.com/a?b=1"), "xx.com");
  EXPECT_EQ(host_of("https://xx.com:8443/"), "xx.com");
  EXPECT_EQ(host_of("http://xx.com"), "xx.com");
  EXPECT_EQ(host_of("http://xx.com?x"), "xx.com");
  EXPECT_EQ(host_of("//xx.com/a"), "xx.com");  // schemaless: the request's scheme
  EXPECT_EQ(host_of("http://user@xx.com/"), "user@xx.com");
  EXPECT_EQ(host_of("http://[::1]:80/a"), "[::1]");
  EXPECT_EQ(host_of("http://[::1]/a]"), "[::1]/a]");  // `\[.+\]` is greedy
  EXPECT_EQ(host_of("xx.com"), "(none)");
  EXPECT_EQ(host_of("ftp://xx.com"), "(none)");
  EXPECT_EQ(host_of("HTTP://xx.com"), "(none)");  // the pattern is case-sensitive
  EXPECT_EQ(host_of("http:/xx.com"), "(none)");
  EXPECT_EQ(host_of("http://"), "(none)");
  EXPECT_EQ(host_of("http://:80/"), "(none)");
  EXPECT_EQ(host_of("http://[]/"), "(none)");
  EXPECT_EQ(host_of(""), "(none)");
}

}  // namespace
}  // namespace sluice::plugins::referer_restriction
