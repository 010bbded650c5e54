// What gzip and brotli share: Accept-Encoding with q-values, the type test, the schema's
// common fields, and the stream pool.

#include "plugins/gzip/coding.h"

#include <gtest/gtest.h>

namespace sluice::plugins::coding {
namespace {

TEST(AcceptEncoding, TokensAndQValues) {
  EXPECT_EQ(parse_accept_encoding(""), 0);
  EXPECT_EQ(parse_accept_encoding("gzip"), kGzip);
  EXPECT_EQ(parse_accept_encoding("GZip"), kGzip);
  EXPECT_EQ(parse_accept_encoding("x-gzip"), kGzip);
  EXPECT_EQ(parse_accept_encoding("br"), kBr);
  EXPECT_EQ(parse_accept_encoding("deflate, gzip, br, zstd"), kGzip | kBr);  // curl --compressed
  EXPECT_EQ(parse_accept_encoding(" gzip ;q=0.5 , br;q=1.0"), kGzip | kBr);
  EXPECT_EQ(parse_accept_encoding("gzip;q=0"), 0);
  EXPECT_EQ(parse_accept_encoding("gzip; Q=0.000, br"), kBr);
  EXPECT_EQ(parse_accept_encoding("br;q=0.0, gzip;q=0.001"), kGzip);
  EXPECT_EQ(parse_accept_encoding("gzipped, brotli, xgzip"), 0);  // whole tokens only
  EXPECT_EQ(parse_accept_encoding("identity"), 0);
  // "*" stands for every coding not listed.
  EXPECT_EQ(parse_accept_encoding("*"), kGzip | kBr);
  EXPECT_EQ(parse_accept_encoding("*;q=0"), 0);
  EXPECT_EQ(parse_accept_encoding("gzip;q=0, *"), kBr);
  EXPECT_EQ(parse_accept_encoding("*, br;q=0"), kGzip);
  // A coding listed twice: accepted when either says so.
  EXPECT_EQ(parse_accept_encoding("gzip;q=0, gzip"), kGzip);
  // Empty elements and a malformed q (read as the default, 1).
  EXPECT_EQ(parse_accept_encoding(",, gzip;q=abc ,"), kGzip);
}

TEST(TypeMatches, MediaTypeBeforeParameters) {
  Common c;  // ["text/html"]
  EXPECT_TRUE(type_matches(c, "text/html"));
  EXPECT_TRUE(type_matches(c, "text/html; charset=utf-8"));
  EXPECT_TRUE(type_matches(c, "text/html ;charset=utf-8"));
  EXPECT_TRUE(type_matches(c, "Text/HTML"));
  EXPECT_FALSE(type_matches(c, "text/plain"));
  EXPECT_FALSE(type_matches(c, "text/htmlx"));
  EXPECT_FALSE(type_matches(c, ""));
  c.types = {"application/json", "text/css"};
  EXPECT_TRUE(type_matches(c, "application/json;charset=utf-8"));
  EXPECT_FALSE(type_matches(c, "text/html"));
  c.any_type = true;
  EXPECT_TRUE(type_matches(c, "image/png"));
}

common::StatusOr<Common> decode(const char* json) {
  Common c;
  auto j = plugin::Json::parse(json);
  schema::FieldDecoder d(j);
  decode_common(d, &c);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

TEST(DecodeCommon, ApisixTexts) {
  auto c = decode(R"({"types": "*", "min_length": 1, "http_version": 1.0, "vary": true})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_TRUE(c->any_type);
  EXPECT_EQ(c->min_length, 1);
  EXPECT_TRUE(c->http10);
  EXPECT_TRUE(c->vary);
  c = decode(R"({"types": ["text/css"], "http_version": 1.1})");
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->any_type);
  EXPECT_EQ(c->types, std::vector<std::string>{"text/css"});
  EXPECT_FALSE(c->http10);
  EXPECT_TRUE(decode(R"({"http_version": 1})").is_ok());                  // Lua: 1 == 1.0
  EXPECT_TRUE(decode(R"({"types": ["text/css", "text/css"]})").is_ok());  // no uniqueItems
  struct Bad {
    const char* conf;
    const char* error;
  };
  for (
      const Bad& b : {
          Bad{R"({"types": []})",
              R"(property "types" validation failed: object matches none of the required)"},
          Bad{R"({"types": [""]})",
              R"(property "types" validation failed: object matches none of the required)"},
          Bad{R"({"types": "text/html"})",
              R"(property "types" validation failed: object matches none of the required)"},
          Bad{R"({"types": [1]})",
              R"(property "types" validation failed: object matches none of the required)"},
          Bad{R"({"min_length": 0})",
              R"(property "min_length" validation failed: expected 0 to be at least 1)"},
          Bad{R"({"min_length": "20"})",
              R"(property "min_length" validation failed: wrong type: expected integer, got string)"},
          Bad{R"({"http_version": 2})",
              R"(property "http_version" validation failed: matches none of the enum values)"},
          Bad{R"({"http_version": "1.1"})",
              R"(property "http_version" validation failed: matches none of the enum values)"},
          Bad{R"({"vary": "yes"})",
              R"(property "vary" validation failed: wrong type: expected boolean, got string)"},
      }) {
    auto r = decode(b.conf);
    ASSERT_FALSE(r.is_ok()) << b.conf;
    EXPECT_EQ(r.status().message(), b.error) << b.conf;
  }
}

struct Thing {
  size_t slot = 0;
  Pool<Thing>* pool = nullptr;
  int id = 0;
};

TEST(Pool, LendsKeepsAFewAndOwnsTheRest) {
  Pool<Thing> pool(2);
  Thing* a = pool.acquire();
  Thing* b = pool.acquire();
  Thing* c = pool.acquire();
  EXPECT_EQ(pool.lent(), 3u);
  EXPECT_EQ(a->pool, &pool);
  pool.release(b);
  pool.release(a);
  pool.release(c);  // a third idle one is freed
  EXPECT_EQ(pool.lent(), 0u);
  EXPECT_EQ(pool.size(), 2u);
  Thing* d = pool.acquire();
  EXPECT_TRUE(d == a || d == b);
  pool.acquire();
  pool.acquire();  // lent ones at the pool's end are freed with it (ASan checks)
  EXPECT_EQ(pool.lent(), 3u);
}

}  // namespace
}  // namespace sluice::plugins::coding
