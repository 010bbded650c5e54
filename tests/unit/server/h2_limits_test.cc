// The pure parts of the HTTP/2 downstream: telling h2c from HTTP/1.1 by the first bytes,
// whole and split at every byte, and the token bucket the flood limits spend.

#include "server/h2_limits.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::server {
namespace {

TEST(H2Preface, WholePrefaceIsHttp2) {
  EXPECT_EQ(detect_preface(kH2Preface), Preface::kHttp2);
  // Frames that follow in the same read do not change the verdict.
  std::string more = std::string(kH2Preface) + "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  EXPECT_EQ(detect_preface(more), Preface::kHttp2);
}

TEST(H2Preface, EveryProperPrefixWaitsForMore) {
  for (size_t n = 1; n < kH2Preface.size(); ++n) {
    EXPECT_EQ(detect_preface(kH2Preface.substr(0, n)), Preface::kNeedMore) << n;
  }
}

TEST(H2Preface, HttpRequestsAreHttp1AtTheirFirstDifferentByte) {
  EXPECT_EQ(detect_preface("GET / HTTP/1.1\r\n"), Preface::kHttp1);
  EXPECT_EQ(detect_preface("G"), Preface::kHttp1);
  EXPECT_EQ(detect_preface("POST"), Preface::kHttp1);
  // Shares "P", then differs: decided without waiting for 24 bytes.
  EXPECT_EQ(detect_preface("PU"), Preface::kHttp1);
  EXPECT_EQ(detect_preface("PRI * HTTP/1.1\r\n\r\n"), Preface::kHttp1);
  // The preface with its last byte wrong.
  std::string bad(kH2Preface);
  bad.back() = 'x';
  EXPECT_EQ(detect_preface(bad), Preface::kHttp1);
}

TEST(TokenBucket, BurstThenRate) {
  TokenBucket b(3, 10);  // 3 at once, then one per 100 ms
  uint64_t t = 1000;
  EXPECT_TRUE(b.take(t));
  EXPECT_TRUE(b.take(t));
  EXPECT_TRUE(b.take(t));
  EXPECT_FALSE(b.take(t));
  EXPECT_FALSE(b.take(t + 99));
  EXPECT_TRUE(b.take(t + 100));
  EXPECT_FALSE(b.take(t + 100));
  // A long quiet time refills to the burst, never beyond it.
  EXPECT_TRUE(b.take(t + 100000));
  EXPECT_TRUE(b.take(t + 100000));
  EXPECT_TRUE(b.take(t + 100000));
  EXPECT_FALSE(b.take(t + 100000));
}

TEST(TokenBucket, ClockGoingBackDoesNotRefill) {
  TokenBucket b(1, 1000);
  EXPECT_TRUE(b.take(5000));
  EXPECT_FALSE(b.take(4000));
  EXPECT_FALSE(b.take(5000));
  EXPECT_TRUE(b.take(5001));
}

}  // namespace
}  // namespace sluice::server
