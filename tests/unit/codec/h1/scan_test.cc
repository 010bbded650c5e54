// The vectorised line scanners must agree with the one-byte-at-a-time definition for every
// byte value, length and alignment.

#include "codec/h1/scan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "unit/codec/h1/feed.h"

namespace sluice::h1 {
namespace {

const char* reference_line_stop(const char* p, const char* end) {
  while (p < end && !is_line_stop(*p)) {
    ++p;
  }
  return p;
}

TEST(ScanTest, EveryByteValueAtEveryOffset) {
  for (int b = 0; b < 256; ++b) {
    for (size_t len = 1; len <= 40; ++len) {
      for (size_t at = 0; at < len; ++at) {
        std::string s(len, 'a');
        s[at] = static_cast<char>(b);
        ExactCopy copy(s);
        const char* p = copy.view().data();
        const char* end = p + len;
        const char* want = reference_line_stop(p, end);
        ASSERT_EQ(find_line_stop(p, end), want) << "byte " << b << " at " << at << " of " << len;
        ASSERT_EQ(find_line_stop_portable(p, end), want) << "byte " << b << " at " << at;
      }
    }
  }
}

TEST(ScanTest, RandomTextWithRareControls) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 2000; ++round) {
    std::string s(static_cast<size_t>(byte(rng)) % 100, 'x');
    for (char& c : s) {
      int v = byte(rng);
      c = static_cast<char>(v < 8 ? "\t\r\n\x7f\x00\x1f\x20\x80"[v] : 0x21 + v % 0x5e);
    }
    ExactCopy copy(s);
    const char* p = copy.view().data();
    const char* end = p + s.size();
    for (size_t from = 0; from <= s.size(); ++from) {
      ASSERT_EQ(find_line_stop(p + from, end), reference_line_stop(p + from, end));
      ASSERT_EQ(find_line_stop_portable(p + from, end), reference_line_stop(p + from, end));
    }
  }
}

TEST(ScanTest, CharacterClasses) {
  for (char c : std::string("!#$%&'*+-.^_`|~09azAZ")) {
    EXPECT_TRUE(is_tchar(c)) << c;
  }
  for (char c : std::string(" \t\"(),/:;<=>?@[\\]{}\x7f\x80\x01", 22)) {
    EXPECT_FALSE(is_tchar(c)) << static_cast<int>(c);
  }
  EXPECT_TRUE(equals_lower("Content-LENGTH", "content-length"));
  EXPECT_FALSE(equals_lower("content-lengtH ", "content-length"));
  EXPECT_EQ(trim_ows(" \t a b\t "), "a b");
  EXPECT_EQ(trim_ows(" \t "), "");
}

}  // namespace
}  // namespace sluice::h1
