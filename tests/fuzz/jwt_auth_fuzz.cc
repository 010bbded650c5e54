// Fuzz target: jwt-auth's token parser and verifier on the input as a token.
//
// parse() must refuse without crashing; a token it accepts has exactly three segments, at most
// kMaxTokenSize bytes, a signing input that is the token up to its second dot, and an object
// payload. Each segment's base64url must be canonical: decoding then re-encoding gives the
// text back. The token is verified with a key of every kind (HMAC, RSA, EC, Ed25519): no
// signature the fuzzer can write verifies under a public key (only
// the seeds PyJWT signed do). Then the token is re-signed with
// HS256 by OpenSSL's one-shot HMAC (not the verifier's code path): that signature must verify,
// one flipped bit must not, and the claims checks run on whatever payload it carries.

#include <openssl/hmac.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "plugins/jwt_auth/config.h"
#include "plugins/jwt_auth/jwt.h"
#include "unit/plugins/jwt_auth/vectors.h"

namespace {

using namespace sluice::plugins::jwt_auth;  // NOLINT: the target's subject

std::string b64url(std::string_view in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) {
    out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  }
  return out;
}

struct Keys {
  Key hs = *Key::make(Alg::kHS256, vectors::kSecret);
  Key rs = *Key::make(Alg::kRS256, vectors::kPem_rsa);
  Key ps = *Key::make(Alg::kPS256, vectors::kPem_rsa);
  Key es = *Key::make(Alg::kES256, vectors::kPem_p256);
  Key es512 = *Key::make(Alg::kES512, vectors::kPem_p521);
  Key ed = *Key::make(Alg::kEdDSA, vectors::kPem_ed25519);
};

bool is_vector(std::string_view signing_input) {
  for (const auto& v : vectors::kVectors) {
    if (std::string_view(v.token).substr(0, signing_input.size()) == signing_input) {
      return true;
    }
  }
  return false;
}

void check_segments(std::string_view token) {
  size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = i < 2 ? token.find('.', start) : token.size();
    std::string_view seg = token.substr(start, end - start);
    std::string raw;
    FUZZ_CHECK(base64url_decode(seg, &raw));
    FUZZ_CHECK(b64url(raw) == seg);
    start = end + 1;
  }
}

void resign_and_verify(const Keys& k, const Token& t) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::string_view secret = vectors::kSecret;
  FUZZ_CHECK(HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                  reinterpret_cast<const unsigned char*>(t.signing_input.data()),
                  t.signing_input.size(), mac, &len) != nullptr);
  std::string sig(reinterpret_cast<const char*>(mac), len);
  FUZZ_CHECK(k.hs.verify(t.signing_input, sig));
  sig[t.signing_input.size() % len] ^= 1;
  FUZZ_CHECK(!k.hs.verify(t.signing_input, sig));
  std::string why;
  for (uint8_t claims = 0; claims < 4; ++claims) {
    bool ok = check_claims(t.payload, claims, static_cast<int64_t>(t.signing_input.size()),
                           vectors::kNow, &why);
    FUZZ_CHECK(ok || !why.empty());
    why.clear();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Keys keys;
  sluice::fuzz::ExactCopy copy(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string_view token = copy.view();
  Token t;
  if (parse(token, &t) != ParseError::kNone) {
    std::string out;
    base64_decode(token, &out);  // the consumer side's base64_secret decoding, for crashes only
    return 0;
  }
  FUZZ_CHECK(token.size() <= kMaxTokenSize);
  const size_t d2 = token.rfind('.');
  FUZZ_CHECK(std::count(token.begin(), token.end(), '.') == 2);
  FUZZ_CHECK(t.signing_input == token.substr(0, d2));
  FUZZ_CHECK(t.payload.is_object());
  check_segments(token);
  keys.hs.verify(t.signing_input, t.signature);
  for (const Key* k : {&keys.rs, &keys.ps, &keys.es, &keys.es512, &keys.ed}) {
    // Only PyJWT's own tokens (seeds) carry a signature that holds under a public key.
    FUZZ_CHECK(!k->verify(t.signing_input, t.signature) || is_vector(t.signing_input));
  }
  resign_and_verify(keys, t);
  return 0;
}
