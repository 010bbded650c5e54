#include "bench/response_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace sluice::bench {
namespace {

struct Fed {
  ResponseReader::Result result = ResponseReader::Result::kNeedMore;
  std::string left;  // bytes still in the buffer after the response
};

// Feeds `bytes` in pieces cut at `cuts` until the reader finishes.
Fed feed_pieces(ResponseReader& reader, std::string_view bytes, const std::vector<size_t>& cuts) {
  io::Buffer in(64 * 1024);
  Fed out;
  size_t at = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(bytes.size());
  for (size_t end : ends) {
    std::memcpy(in.write_ptr(), bytes.data() + at, end - at);
    in.commit(end - at);
    at = end;
    out.result = reader.feed(in);
    if (out.result != ResponseReader::Result::kNeedMore) {
      break;
    }
  }
  out.left = std::string(in.view()) + std::string(bytes.substr(at));
  return out;
}

// Whole, byte by byte, and at random splits: every way must give the same outcome.
std::vector<std::vector<size_t>> splits(size_t n) {
  std::vector<std::vector<size_t>> all = {{}};
  std::vector<size_t> each;
  for (size_t i = 1; i < n; ++i) {
    each.push_back(i);
  }
  all.push_back(each);
  std::mt19937 rng(5);
  for (int k = 0; k < 20; ++k) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < n; ++i) {
      if (rng() % 7 == 0) {
        cuts.push_back(i);
      }
    }
    all.push_back(cuts);
  }
  return all;
}

struct ReaderCase {
  std::string bytes;
  ResponseReader::Result result;
  int status;
  bool keep_alive;
  uint32_t interim;
  std::string left;
};

TEST(ResponseReaderTest, FramesResponsesAtAnySplit) {
  using R = ResponseReader::Result;
  const std::vector<ReaderCase> cases = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", R::kComplete, 200, true, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", R::kComplete, 200, true, 0, "EXTRA"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n"
       "0\r\nT: v\r\n\r\n",
       R::kComplete, 200, true, 0, ""},
      {"HTTP/1.1 204 No Content\r\n\r\n", R::kComplete, 204, true, 0, ""},
      {"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", R::kComplete, 503,
       false, 0, ""},
      {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\nx",
       R::kComplete, 404, true, 1, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", R::kNeedMore, 200, true, 0, ""},
      {"garbage\r\n\r\n", R::kError, 0, true, 0, ""},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", R::kError, 200, true, 0, ""},
  };
  for (const ReaderCase& c : cases) {
    for (const auto& cuts : splits(c.bytes.size())) {
      ResponseReader reader;
      Fed f = feed_pieces(reader, c.bytes, cuts);
      ASSERT_EQ(f.result, c.result) << c.bytes << " cuts " << cuts.size();
      if (c.result == R::kComplete) {
        EXPECT_EQ(reader.status(), c.status) << c.bytes;
        EXPECT_EQ(reader.keep_alive(), c.keep_alive) << c.bytes;
        EXPECT_EQ(reader.interim(), c.interim) << c.bytes;
        EXPECT_EQ(f.left, c.left) << c.bytes;
      }
      if (c.result == R::kError) {
        EXPECT_STRNE(reader.error(), "");
      }
    }
  }
}

TEST(ResponseReaderTest, BodyUntilCloseEndsAtEof) {
  ResponseReader reader;
  Fed f = feed_pieces(reader, "HTTP/1.0 200 OK\r\n\r\nall of it", {});
  EXPECT_EQ(f.result, ResponseReader::Result::kNeedMore);
  EXPECT_EQ(reader.on_eof(), ResponseReader::Result::kComplete);
  EXPECT_FALSE(reader.keep_alive());
  EXPECT_EQ(reader.status(), 200);
}

TEST(ResponseReaderTest, EofInsideAResponseIsAnError) {
  ResponseReader a;
  EXPECT_EQ(a.on_eof(), ResponseReader::Result::kError);
  EXPECT_STREQ(a.error(), "connection closed");
  ResponseReader b;
  feed_pieces(b, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", {});
  EXPECT_EQ(b.on_eof(), ResponseReader::Result::kError);
  EXPECT_STREQ(b.error(), "connection closed inside the body");
}

TEST(ResponseReaderTest, ResetReadsTheNextResponse) {
  ResponseReader reader;
  io::Buffer in(1024);
  std::string two =
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 500 E\r\nContent-Length: 1\r\n\r\nb";
  std::memcpy(in.write_ptr(), two.data(), two.size());
  in.commit(two.size());
  ASSERT_EQ(reader.feed(in), ResponseReader::Result::kComplete);
  EXPECT_EQ(reader.status(), 200);
  reader.reset();
  ASSERT_EQ(reader.feed(in), ResponseReader::Result::kComplete);
  EXPECT_EQ(reader.status(), 500);
  EXPECT_TRUE(in.empty());
}

}  // namespace
}  // namespace sluice::bench
