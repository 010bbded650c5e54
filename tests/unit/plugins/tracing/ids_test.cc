#include "plugins/tracing/ids.h"

#include <gtest/gtest.h>

#include <set>

namespace sluice::plugins::tracing {
namespace {

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  append_hex(&s, p, n);
  return s;
}

TEST(TraceIds, TraceparentRoundTrip) {
  Incoming in = parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ASSERT_TRUE(in.valid);
  EXPECT_EQ(hex(in.trace_id, 16), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(in.span_id, 0xb7ad6b7169203331ull);
  EXPECT_EQ(in.sampled, 1);
  std::string out;
  append_traceparent(&out, in.trace_id, in.span_id, false);
  EXPECT_EQ(out, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  EXPECT_EQ(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").sampled,
            0);
}

TEST(TraceIds, TraceparentMalformedIsNone) {
  const char* bad[] = {
      "",
      "garbage",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",     // short flags
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  // v00 with more
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // version ff
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",    // zero trace id
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",    // zero span id
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",    // upper case
      "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",    // not hex
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  };
  for (const char* b : bad) {
    EXPECT_FALSE(parse_traceparent(b).valid) << b;
  }
  // A later version may carry more fields after its four.
  EXPECT_TRUE(
      parse_traceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what").valid);
}

TEST(TraceIds, B3Single) {
  Incoming in =
      parse_b3_single("80f198ee56343ba864fe8b2a57d3eff7-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90");
  ASSERT_TRUE(in.valid);
  EXPECT_EQ(hex(in.trace_id, 16), "80f198ee56343ba864fe8b2a57d3eff7");
  EXPECT_EQ(in.span_id, 0xe457b5a2e4d86bd1ull);
  EXPECT_EQ(in.parent_id, 0x05e3ac9a4f6e3b90ull);
  EXPECT_EQ(in.sampled, 1);
  Incoming short_id = parse_b3_single("64fe8b2a57d3eff7-e457b5a2e4d86bd1");
  ASSERT_TRUE(short_id.valid);
  EXPECT_EQ(hex(short_id.trace_id, 16), "000000000000000064fe8b2a57d3eff7");
  EXPECT_EQ(short_id.sampled, -1);
  Incoming debug = parse_b3_single("64fe8b2a57d3eff7-e457b5a2e4d86bd1-d");
  EXPECT_TRUE(debug.debug);
  EXPECT_EQ(debug.sampled, 1);
  Incoming deny = parse_b3_single("0");
  EXPECT_FALSE(deny.valid);
  EXPECT_EQ(deny.sampled, 0);
  EXPECT_FALSE(parse_b3_single("64fe8b2a57d3eff7-zz57b5a2e4d86bd1").valid);
  EXPECT_FALSE(parse_b3_single("64fe8b2a57d3eff7-e457b5a2e4d86bd1-2").valid);
  EXPECT_FALSE(parse_b3_single("64fe-e457b5a2e4d86bd1").valid);
}

TEST(TraceIds, B3Multi) {
  Incoming in = parse_b3_multi("463ac35c9f6413ad48485a3953bb6124", "a2fb4a1d1a96d312",
                               "0020000000000001", "1", "");
  ASSERT_TRUE(in.valid);
  EXPECT_EQ(in.span_id, 0xa2fb4a1d1a96d312ull);
  EXPECT_EQ(in.parent_id, 0x0020000000000001ull);
  EXPECT_EQ(in.sampled, 1);
  EXPECT_EQ(parse_b3_multi("", "", "", "0", "").sampled, 0);
  EXPECT_EQ(parse_b3_multi("", "", "", "0", "1").sampled, 1);  // debug overrides
  Incoming bad = parse_b3_multi("nothex", "a2fb4a1d1a96d312", "", "true", "");
  EXPECT_FALSE(bad.valid);
  EXPECT_EQ(bad.sampled, 1);  // the decision stands without the context
}

TEST(TraceIds, RandomIdsDiffer) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t id = new_span_id();
    EXPECT_NE(id, 0u);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  uint8_t a[16], b[16];
  new_trace_id(a);
  new_trace_id(b);
  EXPECT_NE(hex(a, 16), hex(b, 16));
}

}  // namespace
}  // namespace sluice::plugins::tracing
