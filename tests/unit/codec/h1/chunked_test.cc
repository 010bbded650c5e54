// The chunked decoder fed whole, byte by byte and at random splits must reassemble the same
// payload, stop at the same byte, and reject the same way.

#include "codec/h1/chunked.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "unit/codec/h1/feed.h"

namespace sluice::h1 {
namespace {

using Status = ChunkedDecoder::Status;

struct Decoded {
  std::string outcome;  // "done", "need-more" or "error: <reason>"
  std::string payload;
  size_t used = 0;  // bytes consumed in all (for an error: offset of the offending byte)
};

// Feeds `stream` cut at `cuts` the way a connection would: unconsumed bytes stay in the
// caller's buffer and the next read is appended to them.
Decoded decode(std::string_view stream, const std::vector<size_t>& cuts) {
  ChunkedDecoder d;
  Decoded out;
  std::string pending;
  size_t from = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(stream.size());
  for (size_t to : ends) {
    pending.append(stream.substr(from, to - from));
    from = to;
    ExactCopy copy(pending);
    std::string_view in = copy.view();
    for (;;) {
      ChunkedDecoder::Step s = d.step(in);
      EXPECT_LE(s.consumed, in.size());
      out.used += s.consumed;
      if (s.status == Status::kData) {
        EXPECT_FALSE(s.data.empty());
        EXPECT_TRUE(s.data.data() >= in.data() && s.data.end() <= in.end());
        out.payload.append(s.data);
        in.remove_prefix(s.consumed);
        continue;
      }
      if (s.status == Status::kDone) {
        EXPECT_TRUE(d.done());
        out.outcome = "done";
        return out;
      }
      if (s.status == Status::kError) {
        out.outcome = std::string("error: ") + d.error();
        return out;
      }
      EXPECT_EQ(s.consumed, in.size()) << "kNeedMore leaves nothing behind";
      pending.clear();
      break;
    }
  }
  out.outcome = "need-more";
  return out;
}

std::vector<size_t> every_byte(size_t n) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < n; ++i) {
    cuts.push_back(i);
  }
  return cuts;
}

// Decodes whole, byte by byte and at 50 random splits (three seeds); all must agree.
Decoded decode_every_way(std::string_view stream) {
  Decoded whole = decode(stream, {});
  std::vector<std::vector<size_t>> ways = {every_byte(stream.size())};
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    ways.push_back(random_cuts(stream.size(), 50, seed));
  }
  for (const auto& cuts : ways) {
    Decoded split = decode(stream, cuts);
    EXPECT_EQ(split.outcome, whole.outcome);
    EXPECT_EQ(split.payload, whole.payload);
    EXPECT_EQ(split.used, whole.used);
  }
  return whole;
}

struct Valid {
  const char* name;
  std::string stream;
  std::string payload;
  size_t trailing = 0;  // pipelined bytes after the body
};
void PrintTo(const Valid& c, std::ostream* os) { *os << c.name; }

const Valid kValid[] = {
    {"one_chunk", "5\r\nhello\r\n0\r\n\r\n", "hello"},
    {"two_chunks", "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n", "abcdefg"},
    {"empty_body", "0\r\n\r\n", ""},
    {"hex_upper", "A\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
    {"hex_lower", "a\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
    {"leading_zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello"},
    {"sixteen_digits", "000000000000000a\r\n0123456789\r\n0\r\n\r\n", "0123456789"},
    {"extension", "5;name\r\nhello\r\n0;last\r\n\r\n", "hello"},
    {"extension_values", "5;a=b;c=\"q \\\" \\\\ x\";d\r\nhello\r\n0\r\n\r\n", "hello"},
    {"trailers", "2\r\nhi\r\n0\r\nX-Checksum: abc\r\nX-Empty:\r\n\r\n", "hi"},
    {"crlf_in_payload", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n"},
    {"binary_payload", std::string("3\r\n\0\xff\n\r\n0\r\n\r\n", 13), std::string("\0\xff\n", 3)},
    {"pipelined", "1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1\r\n", "x", 16},
    {"big_chunk", "1000\r\n" + std::string(4096, 'z') + "\r\n0\r\n\r\n", std::string(4096, 'z')},
};

class ChunkedValidTest : public testing::TestWithParam<Valid> {};

TEST_P(ChunkedValidTest, DecodesTheSameEveryWay) {
  const Valid& c = GetParam();
  Decoded d = decode_every_way(c.stream);
  EXPECT_EQ(d.outcome, "done");
  EXPECT_EQ(d.payload, c.payload);
  EXPECT_EQ(d.used, c.stream.size() - c.trailing);
}

INSTANTIATE_TEST_SUITE_P(Chunked, ChunkedValidTest, testing::ValuesIn(kValid),
                         [](const auto& info) { return std::string(info.param.name); });

struct Invalid {
  const char* name;
  std::string stream;
  const char* error;
};
void PrintTo(const Invalid& c, std::ostream* os) { *os << c.name; }

const Invalid kInvalid[] = {
    {"negative", "-1\r\n", "invalid chunk size"},
    {"hex_prefix", "0x5\r\nhello\r\n0\r\n\r\n", "invalid chunk size"},
    {"leading_space", " 5\r\nhello\r\n", "invalid chunk size"},
    {"trailing_space", "5 \r\nhello\r\n", "invalid chunk size"},
    {"plus", "+5\r\nhello\r\n", "invalid chunk size"},
    {"empty_size", "\r\nhello\r\n", "invalid chunk size"},
    {"seventeen_digits", "00000000000000005\r\nhello\r\n", "chunk size too large"},
    {"above_2_pow_62", "4000000000000001\r\n", "chunk size too large"},
    {"all_f", "ffffffffffffffff\r\n", "chunk size too large"},
    {"nul_in_extension", std::string("5;ext\0\r\nhello\r\n0\r\n\r\n", 20),
     "invalid chunk extension"},
    {"bare_lf_in_extension", "5;ext\nhello\r\n0\r\n\r\n", "bare LF in chunk size line"},
    {"bare_lf_after_size", "5\nhello\r\n0\r\n\r\n", "bare LF in chunk size line"},
    {"bare_cr_after_size", "5\rhello\r\n", "bare CR in chunk size line"},
    {"cr_in_quoted_extension", "5;a=\"x\ry\"\r\nhello\r\n", "invalid chunk extension"},
    {"empty_extension_name", "5;\r\nhello\r\n", "invalid chunk extension"},
    {"empty_extension_value", "5;a=\r\nhello\r\n", "invalid chunk extension"},
    {"space_before_extension", "5 ;a\r\nhello\r\n", "invalid chunk size"},
    {"garbage_after_quote", "5;a=\"x\"y\r\nhello\r\n", "invalid chunk extension"},
    {"data_longer_than_size", "3\r\nabcd\r\n0\r\n\r\n", "chunk data longer than its size"},
    {"missing_crlf_after_data", "3\r\nabc0\r\n\r\n", "chunk data longer than its size"},
    {"cr_without_lf_after_data", "3\r\nabc\rX0\r\n\r\n", "missing CRLF after chunk data"},
    {"size_line_too_long", "5;" + std::string(5000, 'e') + "\r\nhello\r\n",
     "chunk size line too long"},
    {"trailer_too_big", "0\r\nX-Big: " + std::string(9000, 't') + "\r\n\r\n",
     "trailer section too large"},
    {"trailer_obs_fold", "0\r\nX-A: b\r\n c\r\n\r\n", "invalid trailer field"},
    {"trailer_space_before_colon", "0\r\nX-A : b\r\n\r\n", "invalid trailer field"},
    {"trailer_no_colon", "0\r\nX-A\r\n\r\n", "invalid trailer field"},
    {"trailer_nul", std::string("0\r\nX: a\0\r\n\r\n", 12), "invalid trailer field"},
    {"trailer_bare_lf", "0\r\nX: a\n\r\n", "invalid trailer field"},
    {"final_bare_cr", "0\r\n\rX", "bare CR in trailer section"},
    {"final_bare_lf", "0\r\n\n", "invalid trailer field"},
};

class ChunkedInvalidTest : public testing::TestWithParam<Invalid> {};

TEST_P(ChunkedInvalidTest, RejectsTheSameEveryWay) {
  const Invalid& c = GetParam();
  Decoded d = decode_every_way(c.stream);
  EXPECT_EQ(d.outcome, std::string("error: ") + c.error);
}

INSTANTIATE_TEST_SUITE_P(Chunked, ChunkedInvalidTest, testing::ValuesIn(kInvalid),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ChunkedDecoderTest, NeedsMoreUntilTheFinalCrlf) {
  Decoded d = decode_every_way("5\r\nhello\r\n0\r\n\r");
  EXPECT_EQ(d.outcome, "need-more");
  EXPECT_EQ(d.payload, "hello");
  EXPECT_EQ(d.used, 14u);
}

TEST(ChunkedDecoderTest, StaysDoneAndResets) {
  ChunkedDecoder d;
  ChunkedDecoder::Step s = d.step("0\r\n\r\nrest");
  EXPECT_EQ(s.status, Status::kDone);
  EXPECT_EQ(s.consumed, 5u);
  EXPECT_EQ(d.step("rest").status, Status::kDone);
  EXPECT_EQ(d.step("rest").consumed, 0u);
  d.reset();
  EXPECT_FALSE(d.done());
  EXPECT_EQ(d.step("1\r\n").status, Status::kNeedMore);
  s = d.step("xy");
  EXPECT_EQ(s.status, Status::kData);
  EXPECT_EQ(s.data, "x");
  EXPECT_EQ(s.consumed, 1u);
  EXPECT_EQ(d.step("").status, Status::kNeedMore);
}

TEST(ChunkedDecoderTest, ErrorIsFinalAndPointsAtTheByte) {
  ChunkedDecoder d;
  ChunkedDecoder::Step s = d.step("12g\r\n");
  EXPECT_EQ(s.status, Status::kError);
  EXPECT_EQ(s.consumed, 2u);
  EXPECT_STREQ(d.error(), "invalid chunk size");
  EXPECT_EQ(d.step("0\r\n\r\n").status, Status::kError);
}

TEST(ChunkedEncoderTest, FormatsSizeLines) {
  char buf[20];
  auto fmt = [&buf](uint64_t n) { return std::string(buf, format_chunk_size(n, buf)); };
  EXPECT_EQ(fmt(0), "0\r\n");
  EXPECT_EQ(fmt(10), "a\r\n");
  EXPECT_EQ(fmt(255), "ff\r\n");
  EXPECT_EQ(fmt(4096), "1000\r\n");
  EXPECT_EQ(fmt(UINT64_MAX), "ffffffffffffffff\r\n");
}

TEST(ChunkedEncoderTest, RoundTrips) {
  std::string body;
  for (int i = 0; i < 3000; ++i) {
    body += static_cast<char>('a' + i % 26);
  }
  std::string stream;
  char size_line[20];
  for (size_t off = 0, n = 1; off < body.size(); off += n, n = n * 3 + 1) {
    n = std::min(n, body.size() - off);
    stream.append(size_line, format_chunk_size(n, size_line));
    stream.append(body, off, n);
    stream.append(kChunkEnd);
  }
  stream.append(kLastChunk);
  Decoded d = decode_every_way(stream);
  EXPECT_EQ(d.outcome, "done");
  EXPECT_EQ(d.payload, body);
  EXPECT_EQ(d.used, stream.size());
}

}  // namespace
}  // namespace sluice::h1
