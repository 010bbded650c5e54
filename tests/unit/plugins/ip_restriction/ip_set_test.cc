// IpSet: membership for IPv4 and IPv6 blocks of every prefix length, against a linear scan of
// the same blocks (router::Cidr::contains) as the reference.

#include "plugins/ip_restriction/ip_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace sluice::plugins::ip_restriction {
namespace {

router::IpAddr ip(const char* text) {
  router::IpAddr a;
  EXPECT_TRUE(router::parse_ip(text, &a)) << text;
  return a;
}

IpSet set_of(std::initializer_list<const char*> blocks) {
  IpSet s;
  for (const char* b : blocks) {
    auto c = router::parse_cidr(b);
    EXPECT_TRUE(c.is_ok()) << b;
    s.add(*c);
  }
  return s;
}

TEST(IpSet, EmptyHoldsNothing) {
  IpSet s;
  EXPECT_FALSE(s.contains(ip("127.0.0.1")));
  EXPECT_FALSE(s.contains(ip("::1")));
}

TEST(IpSet, Ipv4AddressesAndBlocks) {
  IpSet s = set_of({"127.0.0.1", "10.0.0.0/8", "192.168.1.0/24", "172.16.0.5/12", "1.2.3.4/31"});
  EXPECT_TRUE(s.contains(ip("127.0.0.1")));
  EXPECT_FALSE(s.contains(ip("127.0.0.2")));
  EXPECT_TRUE(s.contains(ip("10.255.1.2")));
  EXPECT_FALSE(s.contains(ip("11.0.0.0")));
  EXPECT_TRUE(s.contains(ip("192.168.1.255")));
  EXPECT_FALSE(s.contains(ip("192.168.2.0")));
  // Host bits in the base are ignored, as lua-resty-ipmatcher does.
  EXPECT_TRUE(s.contains(ip("172.31.255.255")));
  EXPECT_FALSE(s.contains(ip("172.32.0.0")));
  EXPECT_TRUE(s.contains(ip("1.2.3.5")));
  EXPECT_FALSE(s.contains(ip("1.2.3.6")));
}

TEST(IpSet, Ipv6AddressesAndBlocks) {
  IpSet s = set_of({"::1", "fe80::/10", "2001:db8::/32", "2001:db9:0:0:1::/80", "::/127"});
  EXPECT_TRUE(s.contains(ip("::1")));
  EXPECT_TRUE(s.contains(ip("::")));  // ::/127 holds :: and ::1
  EXPECT_FALSE(s.contains(ip("::2")));
  EXPECT_TRUE(s.contains(ip("febf:ffff::1")));
  EXPECT_FALSE(s.contains(ip("fec0::1")));
  EXPECT_TRUE(s.contains(ip("2001:db8:ffff::1")));
  EXPECT_FALSE(s.contains(ip("2001:db9::1")));
  // A prefix past the first 64 bits.
  EXPECT_TRUE(s.contains(ip("2001:db9::1:0:ffff:ffff")));
  EXPECT_FALSE(s.contains(ip("2001:db9::2:0:0:0")));
}

TEST(IpSet, FamiliesNeverMix) {
  IpSet s = set_of({"0.0.0.0/0"});
  EXPECT_TRUE(s.contains(ip("8.8.8.8")));
  EXPECT_FALSE(s.contains(ip("::1")));
  // An IPv4-mapped IPv6 entry is IPv6, as in lua-resty-ipmatcher.
  IpSet mapped = set_of({"::ffff:1.2.3.4"});
  EXPECT_FALSE(mapped.contains(ip("1.2.3.4")));
  EXPECT_TRUE(mapped.contains(ip("::ffff:1.2.3.4")));
  IpSet all6 = set_of({"::/0"});
  EXPECT_TRUE(all6.contains(ip("2001:db8::1")));
  EXPECT_FALSE(all6.contains(ip("127.0.0.1")));
}

// Random blocks of random lengths in both families, checked against a linear scan.
TEST(IpSet, AgreesWithALinearScan) {
  std::mt19937_64 rng(7);
  std::vector<router::Cidr> blocks;
  IpSet s;
  // Bytes from 16 values, so that random addresses land in blocks often enough.
  auto byte = [&rng] { return static_cast<uint8_t>(rng() % 16 * 17); };
  for (int i = 0; i < 400; ++i) {
    router::Cidr c;
    c.base.v4 = i % 2 == 0;
    for (auto& b : c.base.bytes) {
      b = byte();
    }
    const int max = c.base.v4 ? 32 : 128;
    c.prefix_len = 4 + static_cast<int>(rng() % (max - 3));
    // Clear the host bits as parse_cidr does.
    for (int bit = c.prefix_len; bit < max; ++bit) {
      c.base.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
    }
    if (c.base.v4) {
      std::fill(c.base.bytes.begin() + 4, c.base.bytes.end(), 0);
    }
    blocks.push_back(c);
    s.add(c);
  }
  int hits = 0;
  for (int i = 0; i < 20000; ++i) {
    router::IpAddr a;
    a.v4 = rng() % 2 == 0;
    for (int j = 0; j < (a.v4 ? 4 : 16); ++j) {
      a.bytes[j] = byte();
    }
    bool want = false;
    for (const auto& b : blocks) {
      want = want || b.contains(a);
    }
    EXPECT_EQ(s.contains(a), want) << i;
    hits += want;
  }
  EXPECT_GT(hits, 500);  // the check saw both answers
  EXPECT_LT(hits, 19500);
}

}  // namespace
}  // namespace sluice::plugins::ip_restriction
