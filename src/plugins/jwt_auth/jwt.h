#pragma once
// A strict JWS compact-serialization parser and verifier for jwt-auth: three base64url
// segments without padding, a JSON-object header naming `alg` and a JSON-object payload, and
// signatures checked with OpenSSL against a key prepared once, when the consumers' index is
// built. Nothing here throws; a Token reused across requests keeps its buffers, so parsing
// and verifying an HMAC token allocates nothing once they have grown.

#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "plugins/jwt_auth/json_scan.h"

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

// What jwt-auth reads of a token's payload (a JSON object): the claim naming the consumer
// (key_claim_name) and the registered claims it may check.
// Thread: worker (per request)
struct Payload {
  JsonValue key;
  JsonValue exp;
  JsonValue nbf;
  bool object = false;  // parse() found a JSON object
  bool is_object() const { return object; }
};

// One parsed (not yet verified) token.
// Thread: worker (per request)
struct Token {
  std::string_view signing_input;  // "<header>.<payload>" as sent: what the signature covers
  std::string alg;                 // the header's `alg` (a string), unescaped
  Payload payload;
  std::string signature;  // decoded
  // parse()'s buffers: the header's `alg` as scanned, an escaped member name, and the text
  // of the last header that parsed (`alg` is its alg; empty: none yet).
  JsonValue header_alg;
  std::string name;
  std::string header_text;
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

// Fills *out from `token`, reading the claim `key_claim_name` into out->payload.key; *out is
// reused across calls (its strings keep their capacity).
ParseError parse(std::string_view token, Token* out, std::string_view key_claim_name = "key");

// A consumer's verification key: an HMAC secret or a public key, for one algorithm. An HMAC
// key is kept as the hash states after its inner and outer padded blocks (RFC 2104), so a
// request hashes only the token: each verify copies them into a scratch context of its own
// thread, never writing the shared ones.
// Thread: any (immutable; EVP_PKEY and the HMAC states are only read)
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
  struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  static common::StatusOr<Key> make_hmac(Alg alg, std::string_view secret);
  bool verify_hmac(std::string_view input, std::string_view sig) const;
  bool verify_pkey(std::string_view input, std::string_view sig) const;

  Alg alg_ = Alg::kHS256;
  std::shared_ptr<EVP_MD_CTX> inner_;  // HMAC: after H's block of key ^ ipad
  std::shared_ptr<EVP_MD_CTX> outer_;  // HMAC: after H's block of key ^ opad
  std::shared_ptr<EVP_PKEY> pkey_;
};

// The registered claims jwt-auth can check (route conf `claims_to_verify`), as bits.
inline constexpr uint8_t kClaimExp = 1;
inline constexpr uint8_t kClaimNbf = 2;

// APISIX's checks of `exp` and `nbf` at `now` (Unix seconds) with `grace` seconds of clock
// skew allowed: a present claim must be a number, exp > now - grace, nbf < now + grace. A
// token without them passes. False with *why (for the log) otherwise.
bool check_claims(const Payload& payload, uint8_t claims, int64_t grace, int64_t now,
                  std::string* why);

}  // namespace sluice::plugins::jwt_auth
