#include "plugins/tracing/proto.h"

#include <gtest/gtest.h>

#include "plugins/tracing/otel_span.h"

namespace sluice::plugins::tracing {
namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) {
    s.push_back(static_cast<char>(x));
  }
  return s;
}

TEST(ProtoWriter, Varints) {
  const std::pair<uint64_t, std::string> cases[] = {
      {0, bytes({0})},
      {1, bytes({1})},
      {127, bytes({0x7f})},
      {128, bytes({0x80, 0x01})},
      {300, bytes({0xac, 0x02})},
      {UINT64_MAX, bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
  };
  for (const auto& [v, want] : cases) {
    std::string out;
    ProtoWriter(&out).varint(v);
    EXPECT_EQ(out, want) << v;
  }
  std::string neg;
  ProtoWriter(&neg).int_field(1, -1);  // int64 -1: ten bytes
  EXPECT_EQ(neg.size(), 11u);
}

TEST(ProtoWriter, FieldsAndFixed) {
  std::string out;
  ProtoWriter w(&out);
  w.uint_field(6, 2);  // Span.kind = SERVER
  w.fixed64_field(7, 0x0102030405060708ull);
  w.bytes_field(5, "GET");
  EXPECT_EQ(out, bytes({0x30, 0x02, 0x39, 8, 7, 6, 5, 4, 3, 2, 1, 0x2a, 3, 'G', 'E', 'T'}));
}

TEST(ProtoWriter, NestedLengths) {
  // A short message keeps its one length byte; a long one moves its body for a second.
  std::string out;
  ProtoWriter w(&out);
  size_t outer = w.begin(1);
  size_t inner = w.begin(2);
  w.bytes_field(3, std::string(200, 'x'));
  w.end(inner);
  w.end(outer);
  // inner: tag 3 (0x1a), len 200 (0xc8 0x01), 200 bytes = 203; outer: 0x12, 203 (0xcb 0x01).
  ASSERT_EQ(out.size(), 1u + 2 + 1 + 2 + 203);
  EXPECT_EQ(out.substr(0, 6), bytes({0x0a, 0xce, 0x01, 0x12, 0xcb, 0x01}));
  EXPECT_EQ(out.substr(6, 3), bytes({0x1a, 0xc8, 0x01}));

  std::string small;
  ProtoWriter s(&small);
  size_t m = s.begin(9);
  s.bytes_field(1, "k");
  s.end(m);
  EXPECT_EQ(small, bytes({0x4a, 3, 0x0a, 1, 'k'}));
}

TEST(ProtoWriter, StringAttribute) {
  std::string out;
  put_string_attr(&out, 9, "a", "b");
  // KeyValue{key "a", value AnyValue{string_value "b"}}
  EXPECT_EQ(out, bytes({0x4a, 8, 0x0a, 1, 'a', 0x12, 3, 0x0a, 1, 'b'}));
  std::string i;
  put_int_attr(&i, 9, "n", 200);
  EXPECT_EQ(i, bytes({0x4a, 8, 0x0a, 1, 'n', 0x12, 3, 0x18, 0xc8, 0x01}));
}

}  // namespace
}  // namespace sluice::plugins::tracing
