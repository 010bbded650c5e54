// The parser and verifier against tokens PyJWT made (vectors.inc, make_vectors.py), and the
// tokens a strict parser must refuse: bad base64url, padding, wrong segment counts, JSON that
// is not an object, tampered payloads and signatures, huge tokens.

#include "plugins/jwt_auth/jwt.h"

#include <gtest/gtest.h>
#include <openssl/hmac.h>

#include <string>
#include <thread>
#include <vector>

#include "unit/plugins/jwt_auth/vectors.h"

namespace sluice::plugins::jwt_auth {
namespace {

using namespace vectors;  // NOLINT: test vectors

const Vector& vec(std::string_view name) {
  for (const Vector& v : kVectors) {
    if (name == v.name) {
      return v;
    }
  }
  ADD_FAILURE() << "no vector " << name;
  return kVectors[0];
}

Key key_for(const Vector& v) {
  auto k = Key::make(*alg_from_name(v.alg), v.key);
  EXPECT_TRUE(k.is_ok()) << v.name << ": " << k.status().message();
  return std::move(k).value();
}

// Parses and verifies `token` with `v`'s key: whether the signature holds.
bool verifies(const Vector& v, std::string_view token) {
  Token t;
  if (parse(token, &t) != ParseError::kNone) {
    return false;
  }
  Key k = key_for(v);
  return t.alg == alg_name(k.alg()) && k.verify(t.signing_input, t.signature);
}

TEST(JwtVerify, EveryAlgorithmPyJwtSigns) {
  for (const char* name : {"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384",
                           "PS512", "ES256", "ES384", "ES512", "EdDSA"}) {
    const Vector& v = vec(name);
    Token t;
    ASSERT_EQ(parse(v.token, &t), ParseError::kNone) << name;
    EXPECT_EQ(t.alg, name);
    EXPECT_EQ(t.payload.key.type, JsonValue::Type::kString);
    EXPECT_EQ(t.payload.key.string, "user-key");
    EXPECT_TRUE(key_for(v).verify(t.signing_input, t.signature)) << name;
  }
}

// One changed character anywhere in a segment breaks the signature (or the parse).
TEST(JwtVerify, TamperedPayloadAndSignature) {
  for (const char* name : {"HS256", "RS256", "PS256", "ES256", "ES512", "EdDSA"}) {
    const Vector& v = vec(name);
    std::string tok = v.token;
    size_t d1 = tok.find('.'), d2 = tok.rfind('.');
    std::string payload = tok;
    payload[d1 + 3] = payload[d1 + 3] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(verifies(v, payload)) << name;
    std::string sig = tok;
    sig[d2 + 5] = sig[d2 + 5] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(verifies(v, sig)) << name;
    // The signature cut short or lengthened by one byte's worth.
    EXPECT_FALSE(verifies(v, tok.substr(0, tok.size() - 4))) << name;
    EXPECT_FALSE(verifies(v, tok + "AAAA")) << name;
  }
}

TEST(JwtVerify, WrongKeyOfTheRightType) {
  const Vector& hs = vec("HS256");
  Token t;
  ASSERT_EQ(parse(hs.token, &t), ParseError::kNone);
  EXPECT_FALSE(Key::make(Alg::kHS256, "other-secret")->verify(t.signing_input, t.signature));
  // ES256 signed with P-256, verified with the P-384 key: refused when the key is made.
  auto k = Key::make(Alg::kES256, kPem_p384);
  ASSERT_FALSE(k.is_ok());
  EXPECT_EQ(k.status().message(),
            "public_key is not an EC key on curve prime256v1, as ES256 needs");
}

// OpenSSL's one-shot HMAC of `input` under `secret` (not the code path Key uses).
std::string hmac(Alg alg, std::string_view secret, std::string_view input) {
  const EVP_MD* md = alg == Alg::kHS256   ? EVP_sha256()
                     : alg == Alg::kHS384 ? EVP_sha384()
                                          : EVP_sha512();
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_NE(HMAC(md, secret.data(), static_cast<int>(secret.size()),
                 reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &len),
            nullptr);
  return std::string(reinterpret_cast<const char*>(mac), len);
}

// The prepared inner/outer states give RFC 2104's HMAC for secrets shorter than, as long as
// and longer than the hash's block (64 bytes for SHA-256, 128 for SHA-384/512: hashed first),
// and inputs of every length around a block boundary.
TEST(JwtKey, HmacMatchesOpenSslForEverySecretAndInputLength) {
  for (Alg alg : {Alg::kHS256, Alg::kHS384, Alg::kHS512}) {
    for (size_t n : {1, 2, 31, 32, 63, 64, 65, 127, 128, 129, 200, 1000}) {
      std::string secret(n, '\0');
      for (size_t i = 0; i < n; ++i) {
        secret[i] = static_cast<char>(i * 7 + n);
      }
      Key k = *Key::make(alg, secret);
      for (size_t len = 0; len < 300; len += 13) {
        const std::string input(len, 'x');
        std::string sig = hmac(alg, secret, input);
        EXPECT_TRUE(k.verify(input, sig)) << alg_name(alg) << " secret " << n << " input " << len;
        sig[len % sig.size()] ^= 1;
        EXPECT_FALSE(k.verify(input, sig));
        EXPECT_FALSE(k.verify(input, sig.substr(0, sig.size() - 1)));  // the length counts
      }
    }
  }
}

// One Key (as in the shared index) verified from several threads at once: each thread hashes
// in its own context, so every answer stays right.
TEST(JwtKey, HmacVerifiesFromManyThreadsAtOnce) {
  const Key k = *Key::make(Alg::kHS256, "shared-secret");
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&k, &wrong, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string input = "token-" + std::to_string(t) + "-" + std::to_string(i);
        std::string sig = hmac(Alg::kHS256, "shared-secret", input);
        wrong[t] += k.verify(input, sig) ? 0 : 1;
        sig[0] ^= 1;
        wrong[t] += k.verify(input, sig) ? 1 : 0;
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(JwtKey, RefusesKeysOfTheWrongKind) {
  struct {
    Alg alg;
    const char* pem;
    const char* error;
  } cases[] = {
      {Alg::kRS256, kPem_p256, "public_key is not an RSA key, as RS256 needs"},
      {Alg::kES256, kPem_rsa, "public_key is not an EC key on curve prime256v1, as ES256 needs"},
      {Alg::kEdDSA, kPem_rsa, "public_key is not an Ed25519 or Ed448 key, as EdDSA needs"},
      {Alg::kRS256, "not a key",
       "invalid public_key: not a PEM public key (-----BEGIN PUBLIC KEY-----)"},
  };
  for (const auto& c : cases) {
    auto k = Key::make(c.alg, c.pem);
    ASSERT_FALSE(k.is_ok()) << c.error;
    EXPECT_EQ(k.status().message(), c.error);
  }
}

TEST(JwtParse, RefusesMalformedTokens) {
  const std::string good = vec("HS256").token;
  const size_t d1 = good.find('.');
  const std::string h = good.substr(0, d1);
  struct {
    std::string token;
    ParseError want;
  } cases[] = {
      {"", ParseError::kSegments},
      {"abc", ParseError::kSegments},
      {h + ".e30", ParseError::kSegments},                                // 2 segments
      {good + ".e30", ParseError::kSegments},                             // 4 segments
      {good + "=", ParseError::kBase64},                                  // padding
      {h + "=.e30.", ParseError::kBase64},                                // padding in the header
      {h + ".e30.a+b/", ParseError::kBase64},                             // base64, not base64url
      {h + ".e30.A", ParseError::kBase64},                                // 4n+1 characters
      {h + ".e30.AB", ParseError::kBase64},                               // trailing bits set
      {"e3 0.e30.", ParseError::kBase64},                                 // a space
      {"W10.e30.", ParseError::kHeaderJson},                              // [] header
      {"eyJh.e30.", ParseError::kHeaderJson},                             // truncated JSON
      {"e30.e30.", ParseError::kAlg},                                     // {} header
      {"eyJhbGciOjF9.e30.", ParseError::kAlg},                            // {"alg":1}
      {h + ".W10.", ParseError::kPayloadJson},                            // [] payload
      {h + ".bnVsbA.", ParseError::kPayloadJson},                         // null payload
      {h + "." + std::string(kMaxTokenSize, 'A'), ParseError::kTooLong},  // huge
  };
  for (const auto& c : cases) {
    Token t;
    EXPECT_EQ(parse(c.token, &t), c.want) << c.token.substr(0, 80);
  }
}

std::string b64url(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    for (bits += 8; bits >= 6; bits -= 6) {
      out.push_back(kAlphabet[(acc >> (bits - 6)) & 63]);
    }
  }
  if (bits > 0) {
    out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  }
  return out;
}

// The members a JSON parser would give: the last of a repeated name, names and values
// unescaped, a route's key_claim_name (even "exp"), nested values skipped.
TEST(JwtParse, ReadsTheMembersAJsonParserWould) {
  auto token = [](std::string_view header, std::string_view payload) {
    return b64url(header) + "." + b64url(payload) + ".";
  };
  Token t;
  ASSERT_EQ(parse(token(R"({"alg":"none","typ":"JWT","alg":"HS\u0032\u0035\u0036"})",
                        R"({"key":"a","sub":{"key":"b"},"k\u0065y":"user-\u006bey","exp":[1]})"),
                  &t),
            ParseError::kNone);
  EXPECT_EQ(t.alg, "HS256");
  EXPECT_EQ(t.payload.key.type, JsonValue::Type::kString);
  EXPECT_EQ(t.payload.key.string, "user-key");
  EXPECT_EQ(t.payload.exp.type, JsonValue::Type::kArray);
  EXPECT_EQ(t.payload.nbf.type, JsonValue::Type::kAbsent);
  EXPECT_EQ(parse(token(R"({"alg":"HS256","alg":1})", "{}"), &t), ParseError::kAlg);
  ASSERT_EQ(parse(token(R"({"alg":"HS256"})", R"({"exp":12,"uid":"u1"})"), &t, "uid"),
            ParseError::kNone);
  EXPECT_EQ(t.payload.key.string, "u1");
  ASSERT_EQ(parse(token(R"({"alg":"HS256"})", R"({"exp":12})"), &t, "exp"), ParseError::kNone);
  EXPECT_EQ(t.payload.key.type, JsonValue::Type::kNumber);
  EXPECT_EQ(t.payload.exp.number, 12);
  // Strict as the parser it replaced: a lone surrogate, invalid UTF-8, a number too big for a
  // double, a trailing comma, a second value.
  for (std::string_view bad : {R"({"key":"\ud800"})", "{\"key\":\"\xC0\x80\"}", R"({"exp":1e400})",
                               R"({"key":"a",})", R"({"key":"a"} {})"}) {
    EXPECT_EQ(parse(token(R"({"alg":"HS256"})", bad), &t), ParseError::kPayloadJson) << bad;
  }
}

// One Token reused for a worker's requests (as jwt-auth does): each parse gives its own
// header's alg, whatever the token before it carried or whether it parsed.
TEST(JwtParse, AReusedTokenGivesEachHeadersAlg) {
  auto token = [](std::string_view header, std::string_view payload) {
    return b64url(header) + "." + b64url(payload) + ".";
  };
  const std::string hs = token(R"({"alg":"HS256"})", "{}");
  const std::string rs = token(R"({"alg":"RS256"})", "{}");
  Token t;
  ASSERT_EQ(parse(hs, &t), ParseError::kNone);
  EXPECT_EQ(t.alg, "HS256");
  ASSERT_EQ(parse(rs, &t), ParseError::kNone);
  EXPECT_EQ(t.alg, "RS256");
  EXPECT_EQ(parse(token(R"({"alg":1})", "{}"), &t), ParseError::kAlg);
  EXPECT_EQ(parse(token(R"({"alg":"RS256"},)", "{}"), &t), ParseError::kHeaderJson);
  EXPECT_EQ(parse(token(R"({"alg":"RS256"})", "[]"), &t), ParseError::kPayloadJson);
  ASSERT_EQ(parse(hs, &t), ParseError::kNone);
  EXPECT_EQ(t.alg, "HS256");
  EXPECT_EQ(parse(b64url(R"({"alg":"HS256"})") + ".e30=.", &t), ParseError::kBase64);
  ASSERT_EQ(parse(hs, &t), ParseError::kNone);
  EXPECT_EQ(t.alg, "HS256");
  EXPECT_EQ(parse(".e30.", &t), ParseError::kHeaderJson);  // an empty header is never cached
  EXPECT_EQ(parse(hs.substr(0, hs.find('.')) + "x.e30.", &t), ParseError::kBase64);
  ASSERT_EQ(parse(rs, &t), ParseError::kNone);
  EXPECT_EQ(t.alg, "RS256");
}

TEST(JwtParse, Base64urlIsCanonical) {
  std::string out;
  EXPECT_TRUE(base64url_decode("", &out));
  EXPECT_TRUE(base64url_decode("_-8", &out));
  EXPECT_EQ(out, "\xff\xef");
  out.clear();
  EXPECT_FALSE(base64url_decode("_-9", &out));  // the low bits of '9' would be dropped
  out.clear();
  EXPECT_FALSE(base64url_decode("AA==", &out));
}

// The payload jwt-auth reads of a JSON object text (the parser's own scan).
Payload payload(const std::string& json) {
  Payload p;
  std::string name;
  const JsonWanted claims[] = {{"key", &p.key}, {"exp", &p.exp}, {"nbf", &p.nbf}};
  p.object = scan_json_object(json, claims, &name);
  EXPECT_TRUE(p.object) << json;
  return p;
}

TEST(JwtClaims, ExpNbfAndGrace) {
  Payload p = payload("{\"exp\":" + std::to_string(kNow - 10) +
                      ",\"nbf\":" + std::to_string(kNow + 10) + "}");
  std::string why;
  EXPECT_FALSE(check_claims(p, kClaimExp, 0, kNow, &why));
  EXPECT_EQ(why, "'exp' claim expired at Tue, 14 Nov 2023 22:13:10 GMT");
  EXPECT_TRUE(check_claims(p, kClaimExp, 11, kNow, &why));   // within the grace period
  EXPECT_FALSE(check_claims(p, kClaimExp, 10, kNow, &why));  // exp must be > now - grace
  EXPECT_FALSE(check_claims(p, kClaimNbf, 0, kNow, &why));
  EXPECT_EQ(why, "'nbf' claim not valid until Tue, 14 Nov 2023 22:13:30 GMT");
  EXPECT_TRUE(check_claims(p, kClaimNbf, 11, kNow, &why));
  EXPECT_FALSE(check_claims(p, kClaimNbf, 10, kNow, &why));  // nbf must be < now + grace
  EXPECT_TRUE(check_claims(p, 0, 0, kNow, &why));            // claims_to_verify: []
  // A missing claim passes; one that is not a number does not (null included: cjson.null).
  EXPECT_TRUE(check_claims(payload("{}"), kClaimExp | kClaimNbf, 0, kNow, &why));
  EXPECT_FALSE(check_claims(payload(R"({"exp":"4102444800"})"), kClaimExp, 0, kNow, &why));
  EXPECT_EQ(why, "claim exp is not a number");
  EXPECT_FALSE(check_claims(payload(R"({"nbf":null})"), kClaimNbf, 0, kNow, &why));
  EXPECT_FALSE(check_claims(payload(R"({"exp":true})"), kClaimExp, 0, kNow, &why));
  EXPECT_TRUE(check_claims(payload(R"({"exp":false})"), kClaimExp, 0, kNow, &why));
  EXPECT_TRUE(
      check_claims(payload("{\"exp\":" + std::to_string(kNow) + ".5}"), kClaimExp, 0, kNow, &why));
  // The last of two members with one name counts, as in a JSON parser's object.
  EXPECT_FALSE(check_claims(payload("{\"exp\":4102444800,\"exp\":1}"), kClaimExp, 0, kNow, &why));
  EXPECT_TRUE(check_claims(payload("{\"exp\":1,\"exp\":4102444800}"), kClaimExp, 0, kNow, &why));
}

}  // namespace
}  // namespace sluice::plugins::jwt_auth
