#pragma once
// A strict JWS compact-serialization parser and verifier for jwt-auth: three base64url
// segments without padding, a JSON-object header naming `alg` and a JSON-object payload, and
// signatures checked with OpenSSL against a key parsed once, when the consumers' index is
// built. Nothing here throws or allocates beyond the decoded token.

#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::plugins::jwt_auth {

// The algorithms APISIX's jwt-auth verifies (apisix/plugins/jwt-auth/parser.lua alg_verify).
enum class Alg : uint8_t {
  kHS256,
  kHS384,
  kHS512,
  kRS256,
  kRS384,
  kRS512,
  kES256,
  kES384,
  kES512,
  kPS256,
  kPS384,
  kPS512,
  kEdDSA,
};

std::optional<Alg> alg_from_name(std::string_view name);
std::string_view alg_name(Alg a);
inline bool is_hmac(Alg a) { return a <= Alg::kHS512; }

// A token longer than this is refused before any decoding: a header or cookie of that size
// is no credential a consumer was given.
inline constexpr size_t kMaxTokenSize = 16 * 1024;

// Base64url (RFC 4648 section 5) without padding, canonical: no '=', no byte outside the
// alphabet, no length of 4n+1, and unused trailing bits zero. Appends to *out.
bool base64url_decode(std::string_view in, std::string* out);

// One parsed (not yet verified) token.
// Thread: worker (per request)
struct Token {
  std::string_view signing_input;  // "<header>.<payload>" as sent: what the signature covers
  std::string alg;                 // the header's `alg`, as sent
  nlohmann::json payload;          // an object
  std::string signature;           // decoded
};

// Why parse() refused a token (logged, never sent: the client gets "JWT token invalid").
enum class ParseError : uint8_t {
  kNone,
  kTooLong,
  kSegments,
  kBase64,
  kHeaderJson,
  kAlg,
  kPayloadJson,
};
std::string_view parse_error_text(ParseError e);

// Fills *out from `token`; *out is reused across calls (its strings keep their capacity).
ParseError parse(std::string_view token, Token* out);

// A consumer's verification key: an HMAC secret or a public key, for one algorithm.
// Thread: any (immutable; EVP_PKEY is safe to verify with from several threads)
class Key {
 public:
  // `material`: the secret (already base64-decoded) for HS*, else a PEM public key. Errors
  // say what is wrong with the key for `alg` (not a PEM key, an RSA key for ES256, ...).
  static common::StatusOr<Key> make(Alg alg, std::string_view material);

  Alg alg() const { return alg_; }
  // Whether `sig` is a valid signature of `input` under this key and algorithm.
  bool verify(std::string_view input, std::string_view sig) const;

 private:
  struct PkeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  bool verify_hmac(std::string_view input, std::string_view sig) const;
  bool verify_pkey(std::string_view input, std::string_view sig) const;

  Alg alg_ = Alg::kHS256;
  std::string secret_;
  std::shared_ptr<EVP_PKEY> pkey_;
};

// The registered claims jwt-auth can check (route conf `claims_to_verify`), as bits.
inline constexpr uint8_t kClaimExp = 1;
inline constexpr uint8_t kClaimNbf = 2;

// APISIX's checks of `exp` and `nbf` at `now` (Unix seconds) with `grace` seconds of clock
// skew allowed: a present claim must be a number, exp > now - grace, nbf < now + grace. A
// token without them passes. False with *why (for the log) otherwise.
bool check_claims(const nlohmann::json& payload, uint8_t claims, int64_t grace, int64_t now,
                  std::string* why);

}  // namespace sluice::plugins::jwt_auth
