// parse_server_name: the body of a ClientHello's server_name extension (RFC 6066 section 3),
// hostile input.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tls/context.h"

namespace sluice::tls {
namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes* b, size_t v) {
  b->push_back(static_cast<uint8_t>(v >> 8));
  b->push_back(static_cast<uint8_t>(v));
}

// One ServerName entry: type, u16 length, name.
Bytes sn_entry(uint8_t type, std::string_view name) {
  Bytes b{type};
  put16(&b, name.size());
  b.insert(b.end(), name.begin(), name.end());
  return b;
}

// The extension body: u16 list length, then the entries.
Bytes sn_list(const std::vector<Bytes>& entries) {
  Bytes body;
  for (const Bytes& e : entries) {
    body.insert(body.end(), e.begin(), e.end());
  }
  Bytes b;
  put16(&b, body.size());
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

// Parses from an exact-size heap copy (ASan sees a read past the end) and checks the result
// lies inside the input.
std::string parse(const Bytes& in) {
  auto copy = std::make_unique<uint8_t[]>(in.size() + 1);  // +1: a valid pointer when empty
  std::copy(in.begin(), in.end(), copy.get());
  std::string_view got = parse_server_name(copy.get(), in.size());
  if (!got.empty()) {
    auto base = reinterpret_cast<uintptr_t>(copy.get());
    auto at = reinterpret_cast<uintptr_t>(got.data());
    EXPECT_TRUE(at >= base && at + got.size() <= base + in.size()) << "view outside the input";
  }
  return std::string(got);
}

TEST(ParseServerNameTest, HostName) {
  EXPECT_EQ(parse(sn_list({sn_entry(0, "a.test")})), "a.test");
  EXPECT_EQ(parse(sn_list({sn_entry(0, "x")})), "x");
  EXPECT_EQ(parse(sn_list({sn_entry(0, "MiXeD.Test.")})), "MiXeD.Test.") << "given as sent";
}

TEST(ParseServerNameTest, SkipsOtherNameTypes) {
  EXPECT_EQ(parse(sn_list({sn_entry(7, "opaque"), sn_entry(0, "b.test")})), "b.test");
  EXPECT_EQ(parse(sn_list({sn_entry(1, "only-other")})), "");
  // The first host_name is the one (RFC 6066 allows one of each type).
  EXPECT_EQ(parse(sn_list({sn_entry(0, "first.test"), sn_entry(0, "second.test")})), "first.test");
}

TEST(ParseServerNameTest, EmptyAndTooShort) {
  EXPECT_EQ(parse({}), "");
  EXPECT_EQ(parse({0}), "");
  EXPECT_EQ(parse({0, 0}), "") << "an empty list";
  EXPECT_EQ(parse(sn_list({sn_entry(0, "")})), "") << "an empty name";
}

TEST(ParseServerNameTest, EveryTruncationRefused) {
  const Bytes full = sn_list({sn_entry(0, "truncated.example.test")});
  ASSERT_EQ(parse(full), "truncated.example.test");
  for (size_t n = 0; n < full.size(); ++n) {
    EXPECT_EQ(parse(Bytes(full.begin(), full.begin() + n)), "") << "first " << n << " bytes";
  }
}

TEST(ParseServerNameTest, LengthsThatDisagree) {
  Bytes b = sn_list({sn_entry(0, "a.test")});
  Bytes longer_list = b;
  longer_list[1] += 1;  // the list claims one byte more than there is
  EXPECT_EQ(parse(longer_list), "");
  Bytes shorter_list = b;
  shorter_list[1] -= 1;
  EXPECT_EQ(parse(shorter_list), "");
  Bytes trailing = b;
  trailing.push_back('x');  // a byte after the list
  EXPECT_EQ(parse(trailing), "");
  Bytes name_too_long = b;
  name_too_long[4] += 1;  // the name claims a byte past the list
  EXPECT_EQ(parse(name_too_long), "");
  Bytes huge_name = b;
  huge_name[3] = 0xff;  // a name length of 0xff06
  EXPECT_EQ(parse(huge_name), "");
  Bytes huge_list = b;
  huge_list[0] = 0xff;
  EXPECT_EQ(parse(huge_list), "");
}

TEST(ParseServerNameTest, NameWithNulRefused) {
  EXPECT_EQ(parse(sn_list({sn_entry(0, std::string_view("a.test\0.evil", 12))})), "");
  EXPECT_EQ(parse(sn_list({sn_entry(0, std::string_view("\0", 1))})), "");
}

TEST(ParseServerNameTest, Oversized) {
  EXPECT_EQ(parse(sn_list({sn_entry(0, std::string(255, 'a'))})), std::string(255, 'a'));
  EXPECT_EQ(parse(sn_list({sn_entry(0, std::string(256, 'a'))})), "");
  EXPECT_EQ(parse(sn_list({sn_entry(0, std::string(65000, 'a'))})), "");
  // An oversized entry of another type before the host_name is skipped, not refused.
  EXPECT_EQ(parse(sn_list({sn_entry(9, std::string(1000, 'z')), sn_entry(0, "c.test")})), "c.test");
}

TEST(ParseServerNameTest, Garbage) {
  std::mt19937 rng(20261201);
  for (int i = 0; i < 20000; ++i) {
    Bytes b(rng() % 48);
    for (uint8_t& x : b) {
      x = static_cast<uint8_t>(rng());
    }
    if (b.size() >= 2 && i % 2 == 0) {
      b[0] = static_cast<uint8_t>((b.size() - 2) >> 8);  // half with a list length that fits
      b[1] = static_cast<uint8_t>(b.size() - 2);
    }
    std::string got = parse(b);
    EXPECT_LE(got.size(), 255u);
    EXPECT_EQ(got.find('\0'), std::string::npos);
  }
}

}  // namespace
}  // namespace sluice::tls
