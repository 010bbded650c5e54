#include "router/ip.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>

namespace sluice::router {
namespace {

TEST(ParseIp, AcceptsAndRejects) {
  struct Case {
    std::string text;
    bool ok;
    bool v4;
  };
  const Case cases[] = {
      {"1.2.3.4", true, true},
      {"255.255.255.255", true, true},
      {"0.0.0.0", true, true},
      {"::1", true, false},
      {"fe80::1", true, false},
      {"2001:db8::ff00:42:8329", true, false},
      {"::ffff:1.2.3.4", true, false},
      {"::", true, false},
      {"", false, false},
      {"1.2.3", false, false},
      {"1.2.3.256", false, false},
      {"1.2.3.4 ", false, false},
      {"[::1]", false, false},
      {"1.2.3.4:80", false, false},
      {"fe80::1::2", false, false},
      {"localhost", false, false},
      {std::string(100, '1'), false, false},
  };
  for (const Case& c : cases) {
    IpAddr ip;
    EXPECT_EQ(parse_ip(c.text, &ip), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(ip.v4, c.v4) << c.text;
    }
  }
  IpAddr ip;
  ASSERT_TRUE(parse_ip("10.1.2.3", &ip));
  EXPECT_EQ(ip.bytes[0], 10);
  EXPECT_EQ(ip.bytes[3], 3);
}

TEST(IpFromSockaddr, V4V6AndMapped) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  inet_pton(AF_INET, "192.168.1.7", &in.sin_addr);
  IpAddr expect;
  ASSERT_TRUE(parse_ip("192.168.1.7", &expect));
  EXPECT_EQ(ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in)), expect);

  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::ffff:192.168.1.7", &in6.sin6_addr);
  EXPECT_EQ(ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in6)), expect);

  inet_pton(AF_INET6, "fe80::9", &in6.sin6_addr);
  ASSERT_TRUE(parse_ip("fe80::9", &expect));
  const IpAddr got = ip_from_sockaddr(reinterpret_cast<sockaddr*>(&in6));
  EXPECT_FALSE(got.v4);
  EXPECT_EQ(got, expect);
}

TEST(ParseCidr, Errors) {
  const std::string bad[] = {"",       "10.0.0.0/33", "10.0.0.0/",    "10.0.0.0/-1", "10.0.0.0/a",
                             "::/129", "foo/8",       "10.0.0.0/8/8", "10.0.0/8",    "10.0.0.0/ 8"};
  for (const std::string& text : bad) {
    auto r = parse_cidr(text);
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().message(), "invalid ip address: " + text);
  }
}

TEST(ParseCidr, Contains) {
  struct Case {
    std::string cidr;
    std::string ip;
    bool in;
  };
  const Case cases[] = {
      {"10.0.0.0/8", "10.255.1.2", true},
      {"10.0.0.0/8", "11.0.0.0", false},
      {"10.1.2.3/8", "10.9.9.9", true},  // host bits ignored
      {"1.2.3.4", "1.2.3.4", true},
      {"1.2.3.4", "1.2.3.5", false},
      {"0.0.0.0/0", "200.1.1.1", true},
      {"0.0.0.0/0", "::1", false},  // families never mix
      {"192.168.0.0/23", "192.168.1.200", true},
      {"192.168.0.0/23", "192.168.2.1", false},
      {"192.168.1.128/25", "192.168.1.127", false},
      {"::1", "::1", true},
      {"::1", "::2", false},
      {"::1", "0.0.0.1", false},
      {"fe80::/10", "fe80::1", true},
      {"fe80::/10", "febf:ffff::1", true},
      {"fe80::/10", "fec0::1", false},
      {"2001:db8::/32", "2001:db8:ffff::1", true},
      {"2001:db8::/32", "2001:db9::1", false},
      {"::/0", "2001:db8::1", true},
  };
  for (const Case& c : cases) {
    auto cidr = parse_cidr(c.cidr);
    ASSERT_TRUE(cidr.is_ok()) << c.cidr;
    IpAddr ip;
    ASSERT_TRUE(parse_ip(c.ip, &ip)) << c.ip;
    EXPECT_EQ(cidr->contains(ip), c.in) << c.cidr << " " << c.ip;
  }
  auto v4 = parse_cidr("1.2.3.4");
  EXPECT_EQ(v4->prefix_len, 32);
  auto v6 = parse_cidr("::1");
  EXPECT_EQ(v6->prefix_len, 128);
}

}  // namespace
}  // namespace sluice::router
