// gzip through the plugin chain: when it compresses (Accept-Encoding, type, length, status,
// HTTP version, an encoded answer), the head edits, round trips of many pieces, gateway-made
// answers, the stream going back to the pool on every path, and the schema's texts.

#include "plugins/gzip/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "unit/plugins/gzip/coder_fixture.h"

namespace sluice::plugins::gzip {
namespace {

using coding_test::CoderFixture;
using plugin::Json;

std::string gunzip(std::string_view in, bool* ended = nullptr) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK && (z.avail_in != 0 || z.avail_out == 0));
  if (ended != nullptr) {
    *ended = rc == Z_STREAM_END;
  }
  inflateEnd(&z);
  return out;
}

std::string text(size_t n, uint32_t seed = 1) {
  static const char* kWords[] = {"gateway ", "route ", "<p>", "upstream ", "plugin ", "\n"};
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) {
    s += kWords[rng() % 6];
  }
  s.resize(n);
  return s;
}

common::Status check_text(const char* conf) {
  return check(Json::parse(conf), plugin::PluginUse::kHttp);
}

using GzipTest = CoderFixture;

TEST_F(GzipTest, InfoAndSchema) {
  EXPECT_EQ(info().name, "gzip");
  EXPECT_EQ(info().priority, 995);
  EXPECT_FALSE(info().stream);
  Json s = Json::parse(info().schema);
  EXPECT_EQ(s["properties"]["comp_level"]["maximum"], 9);
  EXPECT_EQ(s["properties"]["buffers"]["default"]["number"], 32);
  EXPECT_TRUE(check_text(R"({})").is_ok());
  EXPECT_TRUE(check_text(R"({"buffers": {"number": 8}})").is_ok());  // APISIX's doc example
  EXPECT_TRUE(check_text(R"({"types": "*", "comp_level": 9, "vary": true, "other": 1})").is_ok());
  EXPECT_EQ(check_text(R"({"comp_level": 0})").message(),
            R"(property "comp_level" validation failed: expected 0 to be at least 1)");
  EXPECT_EQ(check_text(R"({"comp_level": 10})").message(),
            R"(property "comp_level" validation failed: expected 10 to be at most 9)");
  EXPECT_EQ(check_text(R"({"buffers": {"number": 0}})").message(),
            R"(property "buffers" validation failed: property "number" validation failed: )"
            R"(expected 0 to be at least 1)");
  EXPECT_EQ(check_text(R"({"buffers": {"size": "4k"}})").message(),
            R"(property "buffers" validation failed: property "size" validation failed: )"
            R"(wrong type: expected integer, got string)");
  EXPECT_EQ(check_text(R"({"buffers": 8})").message(),
            R"(property "buffers" validation failed: wrong type: expected object, got number)");
  auto c = parse(Json::parse(R"({"buffers": {"size": 100}, "comp_level": 5})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->buffers_number, 32);
  EXPECT_EQ(c->buffers_size, 100);
  EXPECT_EQ(c->comp_level, 5);
}

TEST_F(GzipTest, CompressesAndEditsTheHead) {
  use(info(), R"({})");
  request("gzip, deflate");
  head(200, 5000);
  ASSERT_NE(ctx_.coder, nullptr);
  EXPECT_EQ(edited("Content-Encoding"), "gzip");
  EXPECT_EQ(edited("ETag"), "W/\"abc\"");  // nginx's ngx_http_weak_etag
  EXPECT_TRUE(ctx_.resp.headers.drops("Accept-Ranges"));
  EXPECT_TRUE(ctx_.resp.body_changes);
  EXPECT_EQ(ctx_.resp.content_length, -1);
  EXPECT_EQ(count_added("Vary"), 0);
  std::string plain = text(5000);
  bool ended = false;
  EXPECT_EQ(gunzip(body({plain.substr(0, 1000), plain.substr(1000)}), &ended), plain);
  EXPECT_TRUE(ended);
  EXPECT_EQ(ctx_.coder, nullptr);  // the last piece gave the stream back
  log();
}

TEST_F(GzipTest, ManyPiecesEachFlushedRoundTrip) {
  use(info(), R"({"comp_level": 6})");
  request("gzip");
  head(200, -1);
  std::string plain = text(300000, 7);
  std::vector<std::string> pieces;
  std::mt19937 rng(3);
  for (size_t at = 0; at < plain.size();) {
    size_t n = std::min<size_t>(rng() % 9000, plain.size() - at);
    pieces.push_back(plain.substr(at, n));  // empty ones too
    at += n;
  }
  pieces.emplace_back();  // the end comes alone
  std::string wire;
  size_t consumed = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    bool eof = i + 1 == pieces.size();
    wire += plugin::run_body_filter(chains_, ctx_, pieces[i], eof);
    consumed += pieces[i].size();
    if (!eof && i % 8 == 0) {
      // Z_SYNC_FLUSH: everything that came so far decodes at once.
      ASSERT_EQ(gunzip(wire), plain.substr(0, consumed)) << i;
    }
  }
  bool ended = false;
  EXPECT_EQ(gunzip(wire, &ended), plain);
  EXPECT_TRUE(ended);
  EXPECT_LT(wire.size(), plain.size() / 3);
}

TEST_F(GzipTest, LeavesAloneWhatItShouldNot) {
  use(info(), R"({"min_length": 100})");
  struct Case {
    const char* what;
    std::string accept;
    int status;
    int64_t length;
    std::vector<std::pair<std::string, std::string>> headers;
    int minor = 1;
    http::Method method = http::Method::kGet;
  };
  const std::vector<std::pair<std::string, std::string>> html = {{"Content-Type", "text/html"}};
  for (const Case& c : std::vector<Case>{
           {"no Accept-Encoding", "", 200, 500, html},
           {"q=0", "gzip;q=0", 200, 500, html},
           {"br only", "br", 200, 500, html},
           {"type", "gzip", 200, 500, {{"Content-Type", "text/plain"}}},
           {"no type", "gzip", 200, 500, {}},
           {"short", "gzip", 200, 99, html},
           {"encoded",
            "gzip",
            200,
            500,
            {{"Content-Type", "text/html"}, {"Content-Encoding", "br"}}},
           {"302", "gzip", 302, 500, html},
           {"500", "gzip", 500, 500, html},
           {"204", "gzip", 204, -1, html},
           {"HTTP/1.0", "gzip", 200, 500, html, 0},
           {"HEAD", "gzip", 200, 500, html, 1, http::Method::kHead},
       }) {
    set_up_headers(c.headers);
    request(c.accept, c.minor, c.method);
    head(c.status, c.length);
    EXPECT_EQ(ctx_.coder, nullptr) << c.what;
    EXPECT_EQ(edited("Content-Encoding"), "") << c.what;
    EXPECT_EQ(body({"hello ", "world"}), "hello world") << c.what;
    log();
  }
  // 403 and 404 are compressed (nginx), and a chunked body of unknown length is.
  for (int status : {200, 403, 404}) {
    set_up_headers(html);
    request("gzip");
    head(status, -1);
    EXPECT_EQ(edited("Content-Encoding"), "gzip") << status;
    EXPECT_EQ(gunzip(body({"a", "b"})), "ab");
  }
}

TEST_F(GzipTest, HttpVersionAndVary) {
  use(info(), R"({"http_version": 1.0, "vary": true, "types": ["text/html"]})");
  request("gzip", 0);
  head(200, 500);
  EXPECT_EQ(edited("Content-Encoding"), "gzip");
  EXPECT_EQ(count_added("Vary"), 1);
  log();
  // Vary goes on a compressible answer even for a client that takes no gzip (APISIX adds it
  // before nginx tests Accept-Encoding), so caches keep both variants apart.
  request("identity");
  head(200, 500);
  EXPECT_EQ(edited("Content-Encoding"), "");
  EXPECT_EQ(count_added("Vary"), 1);
  log();
  set_up_headers({{"Content-Type", "image/png"}});
  request("gzip");
  head(200, 500);
  EXPECT_EQ(count_added("Vary"), 0);
}

TEST_F(GzipTest, WeakAndInvalidETags) {
  use(info(), R"({})");
  set_up_headers({{"Content-Type", "text/html"}, {"ETag", "W/\"x\""}});
  request("gzip");
  head(200, -1);
  EXPECT_EQ(edited("ETag"), "");  // already weak: kept as is
  log();
  set_up_headers({{"Content-Type", "text/html"}, {"ETag", "bare"}});
  request("gzip");
  head(200, -1);
  EXPECT_EQ(edited("ETag"), "-");
}

TEST_F(GzipTest, GatewayAnswersByTheirBody) {
  use(info(), R"({"types": ["application/json"]})");
  request("gzip");
  head(404, 0, /*gateway=*/true);
  ASSERT_NE(ctx_.coder, nullptr);  // decided with the body
  std::string json = R"({"error_msg":"404 Route Not Found"})";
  std::string out = body({json});
  EXPECT_EQ(edited("Content-Encoding"), "gzip");
  EXPECT_EQ(gunzip(out), json);
  log();
  request("gzip");
  head(404, 0, true);
  EXPECT_EQ(body({"plain text, not json"}), "plain text, not json");
  EXPECT_EQ(edited("Content-Encoding"), "");
  log();
  request("gzip");
  head(503, 0, true);
  EXPECT_EQ(ctx_.coder, nullptr);  // nginx compresses 200, 403 and 404 only
}

TEST_F(GzipTest, AnAbortedResponseGivesItsStreamBack) {
  use(info(), R"({})");
  for (int i = 0; i < 50; ++i) {
    request("gzip");  // reset(): gives back what the last one held
    EXPECT_EQ(streams_lent(worker_), 0u) << i;
    head(200, -1);
    ASSERT_NE(ctx_.coder_state, nullptr);
    EXPECT_EQ(streams_lent(worker_), 1u);
    std::string_view out =
        plugin::run_body_filter(chains_, ctx_, "a piece, then the client goes", false);
    EXPECT_FALSE(out.empty());
    if (i % 2 == 0) {
      log();  // close_early's log phase
      EXPECT_EQ(streams_lent(worker_), 0u);
    }
  }
  request("gzip");
  EXPECT_EQ(streams_lent(worker_), 0u);
  // One stream kept idle and reused: no new one per request.
  EXPECT_EQ(streams_held(worker_), 1u);
}

TEST_F(GzipTest, StreamsAreReusedAcrossLevels) {
  use(info(), R"({"comp_level": 1})");
  request("gzip");
  head(200, -1);
  std::string plain = text(20000, 9);
  std::string fast = body({plain});
  entries_.clear();
  use(info(), R"({"comp_level": 9})");
  request("gzip");
  head(200, -1);
  std::string best = body({plain});
  EXPECT_EQ(gunzip(fast), plain);
  EXPECT_EQ(gunzip(best), plain);
  EXPECT_LT(best.size(), fast.size());  // the reused stream took the new level
  EXPECT_EQ(streams_held(worker_), 1u);
}

}  // namespace
}  // namespace sluice::plugins::gzip
