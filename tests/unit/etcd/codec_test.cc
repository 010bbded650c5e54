// The etcd room's encodings: base64 as the JSON gateway writes it, range ends, 64-bit fields
// given as strings, key/values, the watch stream's message splitting, and member URLs.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/endpoint.h"
#include "etcd/etcd_store.h"
#include "etcd/watcher.h"

namespace sluice::etcd {
namespace {

TEST(Base64, RoundTripsEveryLengthAndByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all.push_back(static_cast<char>(i));
  }
  for (size_t n = 0; n <= all.size(); n += (n < 8 ? 1 : 37)) {
    std::string in = all.substr(0, n), out;
    ASSERT_TRUE(base64_decode(base64_encode(in), &out)) << n;
    EXPECT_EQ(out, in) << n;
  }
}

TEST(Base64, KnownVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("/apisix/routes/1"), "L2FwaXNpeC9yb3V0ZXMvMQ==");
  std::string out;
  ASSERT_TRUE(base64_decode("L2FwaXNpeC9yb3V0ZXMvMQ==", &out));
  EXPECT_EQ(out, "/apisix/routes/1");
}

TEST(Base64, RefusesBadInput) {
  std::string out;
  EXPECT_FALSE(base64_decode("Zm9v!", &out));
  EXPECT_FALSE(base64_decode("Z", &out));  // one sextet cannot hold a byte
  EXPECT_FALSE(base64_decode("Zm 9v", &out));
}

TEST(PrefixEnd, IncrementsTheLastByteWithCarry) {
  EXPECT_EQ(prefix_end("/apisix/"), "/apisix0");
  EXPECT_EQ(prefix_end("a\xff"), "b");
  EXPECT_EQ(prefix_end(std::string("\xff\xff")), std::string(1, '\0'));
}

TEST(JsonI64, StringsNumbersAndAbsence) {
  Json j = Json::parse(R"({"a":"12","b":7,"c":"x","d":"9223372036854775807","e":"1x"})");
  EXPECT_EQ(json_i64(j, "a"), 12);
  EXPECT_EQ(json_i64(j, "b"), 7);
  EXPECT_EQ(json_i64(j, "c"), 0);
  EXPECT_EQ(json_i64(j, "d"), INT64_MAX);
  EXPECT_EQ(json_i64(j, "e"), 0);
  EXPECT_EQ(json_i64(j, "missing"), 0);
  EXPECT_EQ(json_i64(Json::array(), "a"), 0);
}

TEST(DecodeHeader, ClusterIdAboveInt64) {
  Json j = Json::parse(
      R"({"header":{"cluster_id":"14841639068965178418","member_id":"1","revision":"42"}})");
  Header h = decode_header(j);
  EXPECT_EQ(h.revision, 42);
  EXPECT_EQ(h.cluster_id, 14841639068965178418ull);
}

TEST(DecodeKv, ReadsAKeyValueAndRefusesBadBase64) {
  Json j = {{"key", base64_encode("/apisix/routes/1")},
            {"value", base64_encode(R"({"uri":"/a"})")},
            {"create_revision", "5"},
            {"mod_revision", "9"},
            {"lease", "7587"}};
  KeyValue kv;
  ASSERT_TRUE(decode_kv(j, &kv));
  EXPECT_EQ(kv.key, "/apisix/routes/1");
  EXPECT_EQ(kv.value, R"({"uri":"/a"})");
  EXPECT_EQ(kv.create_revision, 5);
  EXPECT_EQ(kv.mod_revision, 9);
  EXPECT_EQ(kv.lease, 7587);
  // A DELETE event's kv has no value.
  ASSERT_TRUE(decode_kv(Json{{"key", base64_encode("/k")}, {"mod_revision", "3"}}, &kv));
  EXPECT_EQ(kv.value, "");
  EXPECT_FALSE(decode_kv(Json{{"key", "!!"}}, &kv));
  EXPECT_FALSE(decode_kv(Json{{"value", "Zg=="}}, &kv));
  EXPECT_FALSE(decode_kv(Json("x"), &kv));
}

TEST(SplitObjects, MessagesAcrossArbitraryChunks) {
  std::string stream =
      "{\"result\":{\"header\":{\"revision\":\"1\"},\"created\":true}}\n"
      "{\"result\":{\"events\":[{\"kv\":{\"key\":\"e30=\",\"value\":\"In0i\"}}]}}\n"
      "{\"s\":\"a } brace \\\" and quote {\"}\n";
  std::vector<std::string> expected = {
      "{\"result\":{\"header\":{\"revision\":\"1\"},\"created\":true}}",
      "{\"result\":{\"events\":[{\"kv\":{\"key\":\"e30=\",\"value\":\"In0i\"}}]}}",
      "{\"s\":\"a } brace \\\" and quote {\"}"};
  for (size_t step = 1; step <= stream.size(); ++step) {
    std::string buf;
    std::vector<std::string> got;
    ObjectSplitter splitter;
    for (size_t i = 0; i < stream.size(); i += step) {
      buf += stream.substr(i, step);
      ASSERT_TRUE(splitter.feed(&buf, &got)) << step;
    }
    EXPECT_EQ(got, expected) << "chunks of " << step;
    EXPECT_TRUE(buf.empty());
  }
}

TEST(SplitObjects, RefusesWhatIsNotAnObject) {
  std::string buf = "[1,2]";
  std::vector<std::string> got;
  EXPECT_FALSE(ObjectSplitter().feed(&buf, &got));
  buf = "{}}";
  got.clear();
  EXPECT_FALSE(ObjectSplitter().feed(&buf, &got));
  // Refused in a later chunk too: the state carried over says where the object ended.
  ObjectSplitter s;
  buf = "{\"a\":1";
  got.clear();
  EXPECT_TRUE(s.feed(&buf, &got));
  buf += "}x";
  EXPECT_FALSE(s.feed(&buf, &got));
}

// A watch answer of many events can be megabytes, read 16 KiB at a time: each byte is
// examined once, not once per chunk (rescanning from the object's start each time made a
// 4 MiB message cost 256 times its size).
TEST(SplitObjects, LargeMessageScannedOnce) {
  std::string big = "{\"result\":{\"events\":[";
  while (big.size() < (4u << 20)) {
    big += "{\"kv\":{\"key\":\"L2FwaXNpeC9yb3V0ZXMvMQ==\",\"value\":\"e30=\"}},";
  }
  big += "{}]}}\n";
  std::string stream = big + big;
  ObjectSplitter splitter;
  std::string buf;
  std::vector<std::string> got;
  constexpr size_t kChunk = 16384;
  for (size_t i = 0; i < stream.size(); i += kChunk) {
    buf += stream.substr(i, kChunk);
    ASSERT_TRUE(splitter.feed(&buf, &got));
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], big.substr(0, big.size() - 1));
  EXPECT_EQ(got[1], got[0]);
  EXPECT_TRUE(buf.empty());
  EXPECT_EQ(splitter.bytes_examined(), stream.size());
}

TEST(Endpoint, ParsesUrls) {
  auto e = parse_endpoint("http://127.0.0.1:2379");
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 2379);
  e = parse_endpoint("https://etcd.example:443/");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->host, "etcd.example");
  EXPECT_EQ(e->port, 443);
  e = parse_endpoint("http://[::1]:12379");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->authority(), "[::1]:12379");
  e = parse_endpoint("http://etcd");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->port, 2379);
  for (const char* bad : {"etcd:2379", "ftp://a:1", "http://", "http://a:0", "http://a:65536",
                          "http://a:12x", "http://u@a:1", "http://a:1/path", "http://[::1"}) {
    EXPECT_FALSE(parse_endpoint(bad)) << bad;
  }
  // The same checks as config.yaml's deployment.etcd.host, with the URL named.
  EXPECT_EQ(parse_endpoint("http://a:1/path").status().message(),
            "http://a:1/path: a path is not allowed");
  EXPECT_EQ(parse_endpoint("http://::1:2379").status().message(),
            "http://::1:2379: an IPv6 address must be in brackets");
}

}  // namespace
}  // namespace sluice::etcd

namespace sluice::etcd {
namespace {

TEST(ValidUtf8, AcceptsUtf8AndRefusesTheRest) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("/apisix/routes/1"));
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(valid_utf8("\xff"));
  EXPECT_FALSE(valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(valid_utf8("a\x80"));             // a lone continuation byte
}

TEST(IsResourceKey, PlaceholdersOddKeysAndBadUtf8) {
  KeyValue kv;
  kv.key = "/apisix/routes/1";
  kv.value = "{}";
  EXPECT_TRUE(is_resource_key("/apisix", kv));
  kv.key = "/apisix/consumers/\xff";
  EXPECT_FALSE(is_resource_key("/apisix", kv));
  kv.key = "/apisix/routes/";
  kv.value = "init_dir";
  EXPECT_FALSE(is_resource_key("/apisix", kv));
  kv.key = "/apisix/gen_id";
  kv.value = "1";
  EXPECT_FALSE(is_resource_key("/apisix", kv));
  kv.key = "/apisixx/routes/1";
  EXPECT_FALSE(is_resource_key("/apisix", kv));
}

}  // namespace
}  // namespace sluice::etcd
