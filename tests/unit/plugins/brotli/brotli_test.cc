// brotli through the plugin chain: schema texts, when it compresses, round trips of many
// flushed pieces decoded with libbrotlidec, gateway answers, and brotli before gzip.

#include "plugins/brotli/brotli.h"

#include <brotli/decode.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "plugins/gzip/gzip.h"
#include "unit/plugins/gzip/coder_fixture.h"

namespace sluice::plugins::brotli {
namespace {

using coding_test::CoderFixture;
using plugin::Json;
using BrotliTest = CoderFixture;

// Decodes what arrived so far; `ended` says whether the stream is complete.
std::string unbrotli(std::string_view in, bool* ended = nullptr) {
  BrotliDecoderState* d = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  std::string out;
  size_t avail_in = in.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(in.data());
  BrotliDecoderResult r;
  do {
    uint8_t buf[65536];
    size_t avail_out = sizeof buf;
    uint8_t* next_out = buf;
    r = BrotliDecoderDecompressStream(d, &avail_in, &next_in, &avail_out, &next_out, nullptr);
    out.append(reinterpret_cast<char*>(buf), sizeof buf - avail_out);
  } while (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT || BrotliDecoderHasMoreOutput(d));
  EXPECT_NE(r, BROTLI_DECODER_RESULT_ERROR);
  if (ended != nullptr) {
    *ended = r == BROTLI_DECODER_RESULT_SUCCESS;
  }
  BrotliDecoderDestroyInstance(d);
  return out;
}

std::string text(size_t n, uint32_t seed) {
  static const char* kWords[] = {"gateway ", "route ", "<p>", "upstream ", "plugin ", "\n"};
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < n) {
    s += kWords[rng() % 6];
  }
  s.resize(n);
  return s;
}

std::string error_of(const char* conf) {
  return check(Json::parse(conf), plugin::PluginUse::kHttp).message();
}

TEST_F(BrotliTest, InfoAndSchema) {
  EXPECT_EQ(info().name, "brotli");
  EXPECT_EQ(info().priority, 996);
  Json s = Json::parse(info().schema);
  EXPECT_EQ(s["properties"]["comp_level"]["default"], 6);
  EXPECT_EQ(s["properties"]["lgwin"]["default"], 19);
  EXPECT_EQ(error_of(R"({})"), "");
  EXPECT_EQ(error_of(R"({"mode": 2, "comp_level": 0, "lgwin": 0, "lgblock": 24})"), "");
  EXPECT_EQ(error_of(R"({"mode": 3})"),
            R"(property "mode" validation failed: expected 3 to be at most 2)");
  EXPECT_EQ(error_of(R"({"comp_level": 12})"),
            R"(property "comp_level" validation failed: expected 12 to be at most 11)");
  EXPECT_EQ(error_of(R"({"lgwin": 9})"),
            R"(property "lgwin" validation failed: matches none of the enum values)");
  EXPECT_EQ(error_of(R"({"lgwin": "19"})"),
            R"(property "lgwin" validation failed: wrong type: expected integer, got string)");
  EXPECT_EQ(error_of(R"({"lgblock": 15})"),
            R"(property "lgblock" validation failed: matches none of the enum values)");
  EXPECT_EQ(error_of(R"({"types": []})"),
            R"(property "types" validation failed: object matches none of the required)");
  auto c = parse(Json::parse(R"({"mode": 1, "lgwin": 22})"));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->mode, 1);
  EXPECT_EQ(c->lgwin, 22);
  EXPECT_EQ(c->comp_level, 6);
}

TEST_F(BrotliTest, ManyFlushedPiecesRoundTrip) {
  use(info(), R"({"comp_level": 5, "vary": true})");
  request("gzip, br");
  head(200, -1);
  ASSERT_NE(ctx_.coder, nullptr);
  EXPECT_EQ(edited("Content-Encoding"), "br");
  EXPECT_EQ(count_added("Vary"), 1);
  std::string plain = text(200000, 5);
  std::mt19937 rng(11);
  std::string wire;
  size_t consumed = 0;
  int i = 0;
  while (consumed < plain.size()) {
    size_t n = std::min<size_t>(rng() % 7000, plain.size() - consumed);
    wire += plugin::run_body_filter(chains_, ctx_, plain.substr(consumed, n), false);
    consumed += n;
    if (++i % 8 == 0) {
      std::string got = unbrotli(wire);  // BROTLI_OPERATION_FLUSH: all of it decodes
      ASSERT_EQ(got.size(), consumed) << i;
      ASSERT_TRUE(got == plain.substr(0, consumed)) << i;
    }
  }
  wire += plugin::run_body_filter(chains_, ctx_, {}, true);
  bool ended = false;
  EXPECT_EQ(unbrotli(wire, &ended), plain);
  EXPECT_TRUE(ended);
  EXPECT_LT(wire.size(), plain.size() / 3);
  EXPECT_EQ(ctx_.coder_state, nullptr);
}

TEST_F(BrotliTest, WhenItCompresses) {
  use(info(), R"({"types": "*"})");
  request("gzip");  // no br
  head(200, 500);
  EXPECT_EQ(ctx_.coder, nullptr);
  request("br;q=0");
  head(200, 500);
  EXPECT_EQ(ctx_.coder, nullptr);
  request("br");
  head(200, 10);  // under min_length
  EXPECT_EQ(ctx_.coder, nullptr);
  // APISIX's brotli compresses any status with a body, not only nginx's 200/403/404.
  request("br");
  head(500, -1);
  EXPECT_EQ(edited("Content-Encoding"), "br");
  EXPECT_EQ(unbrotli(body({"internal ", "error"})), "internal error");
  request("br", 1, http::Method::kHead);
  head(200, 500);
  EXPECT_EQ(ctx_.coder, nullptr);
  request("br");
  head(304, -1);
  EXPECT_EQ(ctx_.coder, nullptr);
  request("br");
  head(206, -1);  // its Content-Range counts identity bytes
  EXPECT_EQ(ctx_.coder, nullptr);
}

TEST_F(BrotliTest, GatewayAnswer) {
  use(info(), R"({"types": ["application/json"]})");
  request("br");
  head(503, 0, true);
  std::string json = R"({"error_msg":"503 Service Temporarily Unavailable"})";
  std::string out = body({json});
  EXPECT_EQ(edited("Content-Encoding"), "br");
  EXPECT_EQ(unbrotli(out), json);
}

// With both on a route, a client taking both gets brotli (it runs first, as in APISIX, where
// nginx's gzip then finds the body encoded); one taking gzip only gets gzip.
TEST_F(BrotliTest, BrotliBeforeGzip) {
  use(gzip::info(), R"({})");
  use(info(), R"({})");
  request("gzip, br");
  head(200, -1);
  EXPECT_EQ(edited("Content-Encoding"), "br");
  EXPECT_EQ(unbrotli(body({"<html>", "</html>"})), "<html></html>");
  request("gzip");
  head(200, -1);
  EXPECT_EQ(edited("Content-Encoding"), "gzip");
  body({"<html>", "</html>"});
  log();
  EXPECT_EQ(gzip::streams_lent(worker_), 0u);
}

TEST_F(BrotliTest, AbortLetsGo) {
  use(info(), R"({})");
  for (int i = 0; i < 20; ++i) {
    request("br");
    head(200, -1);
    ASSERT_NE(ctx_.coder_state, nullptr);
    plugin::run_body_filter(chains_, ctx_, "a piece, then the client goes", false);
    if (i % 2 == 0) {
      log();
      EXPECT_EQ(ctx_.coder_state, nullptr);
    }
  }
  // ASan's leak check at exit sees any encoder left behind.
}

}  // namespace
}  // namespace sluice::plugins::brotli
