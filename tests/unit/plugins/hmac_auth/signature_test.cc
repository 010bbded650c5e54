// hmac-auth's pieces: the Signature parameter parser, the signing string and MAC against the
// vectors tests/integration/hmac_client.py prints (a client written from APISIX's docs),
// strict base64, IMF-fixdate and the body digest.

#include "plugins/hmac_auth/signature.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::plugins::hmac_auth {
namespace {

std::string b64(const unsigned char* p, size_t n) {
  std::string out(4 * ((n + 2) / 3), '\0');
  out.resize(encode_base64(p, n, out.data()));
  return out;
}

TEST(HmacSignatureParse, Good) {
  SignatureParams p;
  ASSERT_EQ(parse_signature_header(R"(Signature keyId="john-key",algorithm="hmac-sha256",)"
                                   R"(headers="@request-target date",signature="abc+/=")",
                                   &p),
            ParseResult::kOk);
  EXPECT_EQ(p.key_id, "john-key");
  EXPECT_EQ(p.algorithm, "hmac-sha256");
  EXPECT_EQ(p.headers, "@request-target date");
  EXPECT_EQ(p.signature, "abc+/=");
  EXPECT_TRUE(p.has_key_id && p.has_algorithm && p.has_headers && p.has_signature);

  // Spaces around commas, unknown parameters skipped, order free, empty values kept.
  ASSERT_EQ(parse_signature_header(
                "Signature\t signature=\"\" , created=\"1\",keyId=\"k\" ,expires=\"x y\"", &p),
            ParseResult::kOk);
  EXPECT_EQ(p.key_id, "k");
  EXPECT_TRUE(p.has_signature);
  EXPECT_EQ(p.signature, "");
  EXPECT_FALSE(p.has_algorithm);
  EXPECT_FALSE(p.has_headers);
}

TEST(HmacSignatureParse, Refused) {
  struct Case {
    const char* in;
    ParseResult want;
  };
  const Case cases[] = {
      {"", ParseResult::kNotSignature},
      {"Basic abc", ParseResult::kNotSignature},
      {"signature keyId=\"a\"", ParseResult::kNotSignature},  // APISIX's prefix test is exact
      {"Signature", ParseResult::kMalformed},
      {"Signature ", ParseResult::kMalformed},
      {"SignaturekeyId=\"a\"", ParseResult::kMalformed},
      {"Signature keyId=a", ParseResult::kMalformed},
      {"Signature keyId=\"a", ParseResult::kMalformed},
      {"Signature keyId=\"a\",", ParseResult::kMalformed},
      {"Signature keyId=\"a\" algorithm=\"b\"", ParseResult::kMalformed},
      {"Signature keyId=\"a\",keyId=\"b\"", ParseResult::kMalformed},  // duplicate
      {"Signature signature=\"a\",signature=\"a\"", ParseResult::kMalformed},
      {"Signature key-id=\"a\"", ParseResult::kMalformed},  // names are letters and digits
      {"Signature keyId = \"a\"", ParseResult::kMalformed},
      {"Signature keyId=\"a\\\"b\"", ParseResult::kMalformed},  // no escapes
      {"Signature keyId=\"a,b\"", ParseResult::kMalformed},
      {"Signature keyId=\"a\x01\"", ParseResult::kMalformed},
      {"Signature keyId=\"\xc3\xa9\"", ParseResult::kMalformed},
      {"Signature headers=\"\"", ParseResult::kMalformed},
      {"Signature headers=\" date\"", ParseResult::kMalformed},
      {"Signature headers=\"date \"", ParseResult::kMalformed},
      {"Signature headers=\"a  b\"", ParseResult::kMalformed},
      {"Signature =\"a\"", ParseResult::kMalformed},
  };
  for (const Case& c : cases) {
    SignatureParams p;
    EXPECT_EQ(parse_signature_header(c.in, &p), c.want) << c.in;
  }
}

struct Vector {
  const char* key_id;
  const char* secret;
  const char* method;
  const char* uri;
  std::vector<http::Header> headers;
  const char* list;
  Algorithm algo;
  const char* signing;
  const char* signature;
};

// From `python3 tests/integration/hmac_client.py vectors`.
const std::vector<Vector>& vectors() {
  static const std::vector<Vector> v = {
      {"john-key",
       "john-secret-key",
       "GET",
       "/get",
       {{"Date", "Fri, 06 Sep 2024 06:41:29 GMT"}},
       "@request-target date",
       Algorithm::kSha256,
       "john-key\nGET /get\ndate: Fri, 06 Sep 2024 06:41:29 GMT\n",
       "j+feO3Wm5em0agp0A70FZErf6lrMDVs7zjQ9MxomPx0="},
      {"k1",
       "s3cr3t",
       "POST",
       "/a/b?x=1&y=%20",
       {{"Date", "Tue, 19 Jan 2021 11:33:20 GMT"},
        {"X-Custom-A", "test"},
        {"User-Agent", "curl/7.29.0"}},
       "@request-target date x-custom-a User-Agent",
       Algorithm::kSha1,
       "k1\nPOST /a/b?x=1&y=%20\ndate: Tue, 19 Jan 2021 11:33:20 GMT\nx-custom-a: test\n"
       "User-Agent: curl/7.29.0\n",
       "1/RgNJF6ewiKpkDKm+AyYeotg1c="},
      {"k2",
       "another secret",
       "PUT",
       "",
       {{"Date", "Thu, 01 Jan 1970 00:00:00 GMT"}},
       "date @request-target absent",
       Algorithm::kSha512,
       "k2\ndate: Thu, 01 Jan 1970 00:00:00 GMT\nPUT /\n",
       "yNoVAxacTHvUPeWbbTtZj5Jdq+lXHdsZemgWMF15jU/vJf1REDRdT1sbh0wyi4IDiJ6G1/kjm8YlqkDEyqjOcg=="},
      {"k3",
       "s",
       "DELETE",
       "/",
       {},
       "",
       Algorithm::kSha256,
       "k3\n",
       "BfcUXB0FguApPWdOvMztJi9r0cdiJJx5blgDstsihBk="},
  };
  return v;
}

TEST(HmacSignature, MatchesTheClientVectors) {
  for (const Vector& v : vectors()) {
    SignatureParams p;
    p.key_id = v.key_id;
    p.headers = v.list;
    p.has_headers = *v.list != '\0';
    std::string s;
    build_signing_string(p, v.method, v.uri, v.headers.data(), v.headers.size(), &s);
    EXPECT_EQ(s, v.signing) << v.key_id;
    unsigned char mac[kMaxMac];
    size_t n = compute_hmac(v.algo, v.secret, s, mac);
    EXPECT_EQ(b64(mac, n), v.signature) << v.key_id;
  }
}

TEST(HmacSignature, FirstHeaderValueAndCaseOfTheList) {
  const std::vector<http::Header> h = {{"date", "one"}, {"Date", "two"}};
  SignatureParams p;
  p.key_id = "k";
  p.headers = "DATE";
  std::string s;
  build_signing_string(p, "GET", "/", h.data(), h.size(), &s);
  EXPECT_EQ(s, "k\nDATE: one\n");
}

TEST(HmacSignature, Algorithms) {
  Algorithm a{};
  EXPECT_TRUE(parse_algorithm("hmac-sha1", &a));
  EXPECT_EQ(a, Algorithm::kSha1);
  EXPECT_TRUE(parse_algorithm("hmac-sha512", &a));
  EXPECT_EQ(a, Algorithm::kSha512);
  EXPECT_FALSE(parse_algorithm("HMAC-SHA256", &a));
  EXPECT_FALSE(parse_algorithm("hmac-md5", &a));
  // Python's hmac module over the inputs of APISIX's docs' sample (whose printed output
  // matches no HMAC-SHA256 of them, so it is not used).
  unsigned char mac[kMaxMac];
  size_t n =
      compute_hmac(Algorithm::kSha256, "this is secret key", "this is signature string", mac);
  EXPECT_EQ(b64(mac, n), "hXBSc9GNjMz8CuhR/+IcrgVl058er1D7/VYtzBQg9Q8=");
}

TEST(HmacSignature, Base64IsStrict) {
  unsigned char out[16];
  size_t len = 0;
  ASSERT_TRUE(decode_base64("Zm9vOmJhcg==", out, sizeof(out), &len));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), len), "foo:bar");
  ASSERT_TRUE(decode_base64("Zm9vOmJhcg", out, sizeof(out), &len));  // unpadded
  EXPECT_EQ(len, 7u);
  ASSERT_TRUE(decode_base64("", out, sizeof(out), &len));
  EXPECT_EQ(len, 0u);
  for (const char* bad : {"Zm9vOmJhcg=", "Zm9vOmJhcg===", "Zm9v=mJh", "Zm9vOmJhch==", "Z",
                          "Zm9v OmJh", "Zm9v\n", "Zm9-", "====", "Zm9vOmJhcg==x"}) {
    EXPECT_FALSE(decode_base64(bad, out, sizeof(out), &len)) << bad;
  }
  EXPECT_FALSE(decode_base64("Zm9vOmJhcmJhemJhcmJhejEyMzQ=", out, 8, &len));  // too long
}

TEST(HmacSignature, ImfFixdate) {
  int64_t t = 0;
  ASSERT_TRUE(parse_imf_fixdate("Sun, 06 Nov 1994 08:49:37 GMT", &t));
  EXPECT_EQ(t, 784111777);
  ASSERT_TRUE(parse_imf_fixdate("Thu, 01 Jan 1970 00:00:00 GMT", &t));
  EXPECT_EQ(t, 0);
  ASSERT_TRUE(parse_imf_fixdate("Tue, 29 Feb 2000 23:59:59 GMT", &t));
  EXPECT_EQ(t, 951868799);
  for (const char* bad : {"Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
                          "Sun Nov  6 08:49:37 1994",        // asctime
                          "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT",
                          "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 nov 1994 08:49:37 GMT",
                          "Sun, 31 Apr 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT",
                          "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT",
                          "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ", ""}) {
    EXPECT_FALSE(parse_imf_fixdate(bad, &t)) << bad;
  }
}

TEST(HmacSignature, BodyDigest) {
  // APISIX's docs' example body and Digest.
  EXPECT_TRUE(body_digest_matches("SHA-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8=",
                                  R"({"name": "world"})"));
  EXPECT_TRUE(body_digest_matches("SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", ""));
  EXPECT_FALSE(body_digest_matches("SHA-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8=",
                                   R"({"name": "World"})"));
  EXPECT_FALSE(body_digest_matches("sha-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8=",
                                   R"({"name": "world"})"));
  EXPECT_FALSE(body_digest_matches("SHA-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8",
                                   R"({"name": "world"})"));
}

TEST(HmacSignature, RequestUri) {
  http::RequestHead h;
  h.target = "/a?b=1";
  EXPECT_EQ(request_uri(h), "/a?b=1");
  h.target = "http://example.com:8080/p?q";
  h.authority = "example.com:8080";
  EXPECT_EQ(request_uri(h), "/p?q");
  h.target = "http://example.com";
  h.authority = "example.com";
  EXPECT_EQ(request_uri(h), "/");
}

}  // namespace
}  // namespace sluice::plugins::hmac_auth
