// DnsCache: answers kept for dns_resolver_valid seconds, re-resolved on refresh() once
// expired, and a changed answer reported so the gateway rebuilds its snapshot with the new
// address. A test resolver stands in for getaddrinfo so the answer can change.

#include "upstream/resolver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

namespace sluice::upstream {
namespace {

std::map<std::string, std::string> g_answers;
int g_resolves = 0;

std::string fake_resolve(const std::string& host) {
  ++g_resolves;
  auto it = g_answers.find(host);
  return it == g_answers.end() ? std::string() : it->second;
}

class DnsCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_answers = {{"api.internal", "10.0.0.1"}};
    g_resolves = 0;
  }
};

TEST_F(DnsCacheTest, AnswerIsCachedUntilItExpires) {
  DnsCache dns(60, &fake_resolve);
  EXPECT_EQ(dns.lookup("api.internal"), "10.0.0.1");
  g_answers["api.internal"] = "10.0.0.2";
  EXPECT_EQ(dns.lookup("api.internal"), "10.0.0.1");
  EXPECT_EQ(g_resolves, 1);
  EXPECT_FALSE(dns.refresh());  // not expired: not asked again
  EXPECT_EQ(g_resolves, 1);
}

TEST_F(DnsCacheTest, RefreshReportsAChangedAddressOnceExpired) {
  DnsCache dns(0.05, &fake_resolve);
  EXPECT_EQ(dns.lookup("api.internal"), "10.0.0.1");
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_FALSE(dns.refresh());  // expired, asked again, same answer
  EXPECT_EQ(g_resolves, 2);
  g_answers["api.internal"] = "10.0.0.2";
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_TRUE(dns.refresh());
  EXPECT_EQ(dns.lookup("api.internal"), "10.0.0.2");
}

TEST_F(DnsCacheTest, ANameThatStopsResolvingIsAChangeToo) {
  DnsCache dns(0.05, &fake_resolve);
  EXPECT_EQ(dns.lookup("api.internal"), "10.0.0.1");
  g_answers.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_TRUE(dns.refresh());
  EXPECT_EQ(dns.lookup("api.internal"), "");
}

TEST_F(DnsCacheTest, IpLiteralsAreNotResolved) {
  DnsCache dns(60, &fake_resolve);
  EXPECT_EQ(dns.lookup("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(dns.lookup("::1"), "::1");
  EXPECT_EQ(g_resolves, 0);
}

TEST(DnsCacheRealTest, LocalhostResolvesThroughGetaddrinfo) {
  DnsCache dns(60);
  std::string ip = dns.lookup("localhost");
  EXPECT_TRUE(ip == "127.0.0.1" || ip == "::1") << ip;
  EXPECT_EQ(dns.lookup("no-such-host.invalid"), "");
}

}  // namespace
}  // namespace sluice::upstream
