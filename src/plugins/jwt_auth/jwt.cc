#include "plugins/jwt_auth/jwt.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <array>
#include <cstring>
#include <ctime>

namespace sluice::plugins::jwt_auth {

using common::Status;
using common::StatusOr;

namespace {

constexpr std::array<std::string_view, 13> kAlgNames = {
    "HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "ES256",
    "ES384", "ES512", "PS256", "PS384", "PS512", "EdDSA",
};

// 0-63 for the base64url alphabet, 64 for anything else.
constexpr std::array<uint8_t, 256> make_table() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) {
    v = 64;
  }
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (uint8_t i = 0; i < 64; ++i) {
    t[static_cast<uint8_t>(alphabet[i])] = i;
  }
  return t;
}
constexpr std::array<uint8_t, 256> kB64 = make_table();

// SHA-2 size of the algorithm: 256, 384 or 512 (EdDSA: none, 0).
int sha_bits(Alg a) {
  switch (a) {
    case Alg::kHS256:
    case Alg::kRS256:
    case Alg::kES256:
    case Alg::kPS256:
      return 256;
    case Alg::kHS384:
    case Alg::kRS384:
    case Alg::kES384:
    case Alg::kPS384:
      return 384;
    case Alg::kHS512:
    case Alg::kRS512:
    case Alg::kES512:
    case Alg::kPS512:
      return 512;
    case Alg::kEdDSA:
      return 0;
  }
  return 0;
}

const EVP_MD* digest(Alg a) {
  switch (sha_bits(a)) {
    case 256:
      return EVP_sha256();
    case 384:
      return EVP_sha384();
    case 512:
      return EVP_sha512();
    default:
      return nullptr;
  }
}

bool is_rsa(Alg a) {
  return (a >= Alg::kRS256 && a <= Alg::kRS512) || (a >= Alg::kPS256 && a <= Alg::kPS512);
}
bool is_pss(Alg a) { return a >= Alg::kPS256 && a <= Alg::kPS512; }
bool is_ec(Alg a) { return a >= Alg::kES256 && a <= Alg::kES512; }

// The curve ESxxx names (RFC 7518 section 3.4) and the size of one of its coordinates.
std::string_view ec_curve(Alg a) {
  return a == Alg::kES256 ? "prime256v1" : a == Alg::kES384 ? "secp384r1" : "secp521r1";
}
size_t ec_coordinate_size(Alg a) { return a == Alg::kES256 ? 32 : a == Alg::kES384 ? 48 : 66; }

// Whether the key's type is the one `alg` needs.
Status check_key_type(Alg alg, EVP_PKEY* k) {
  if (is_rsa(alg)) {
    if (EVP_PKEY_is_a(k, "RSA") || (is_pss(alg) && EVP_PKEY_is_a(k, "RSA-PSS"))) {
      return Status::ok();
    }
    return Status::error("public_key is not an RSA key, as " + std::string(alg_name(alg)) +
                         " needs");
  }
  if (is_ec(alg)) {
    char group[64] = {0};
    size_t len = 0;
    if (EVP_PKEY_is_a(k, "EC") && EVP_PKEY_get_group_name(k, group, sizeof(group), &len) == 1 &&
        std::string_view(group, len) == ec_curve(alg)) {
      return Status::ok();
    }
    return Status::error("public_key is not an EC key on curve " + std::string(ec_curve(alg)) +
                         ", as " + std::string(alg_name(alg)) + " needs");
  }
  if (EVP_PKEY_is_a(k, "ED25519") || EVP_PKEY_is_a(k, "ED448")) {
    return Status::ok();
  }
  return Status::error("public_key is not an Ed25519 or Ed448 key, as EdDSA needs");
}

// JWS's ECDSA signature is R || S, each left-padded to the curve's size (RFC 7518 3.4);
// OpenSSL verifies the DER form. False when `raw` is not exactly that long.
bool ecdsa_raw_to_der(Alg alg, std::string_view raw, std::string* der) {
  const size_t n = ec_coordinate_size(alg);
  if (raw.size() != 2 * n) {
    return false;
  }
  const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(p, static_cast<int>(n), nullptr);
  BIGNUM* s = BN_bin2bn(p + n, static_cast<int>(n), nullptr);
  bool ok = sig != nullptr && r != nullptr && s != nullptr && ECDSA_SIG_set0(sig, r, s) == 1;
  if (!ok) {
    BN_free(r);
    BN_free(s);
  } else {
    int len = i2d_ECDSA_SIG(sig, nullptr);
    ok = len > 0;
    if (ok) {
      der->resize(static_cast<size_t>(len));
      auto* out = reinterpret_cast<unsigned char*>(der->data());
      ok = i2d_ECDSA_SIG(sig, &out) == len;
    }
  }
  ECDSA_SIG_free(sig);
  return ok;
}

}  // namespace

std::optional<Alg> alg_from_name(std::string_view name) {
  for (size_t i = 0; i < kAlgNames.size(); ++i) {
    if (kAlgNames[i] == name) {
      return static_cast<Alg>(i);
    }
  }
  return std::nullopt;
}

std::string_view alg_name(Alg a) { return kAlgNames[static_cast<size_t>(a)]; }

bool base64url_decode(std::string_view in, std::string* out) {
  const size_t rest = in.size() % 4;
  if (rest == 1) {
    return false;
  }
  // Sized once, then written in place, four characters (three bytes) at a time.
  const size_t base = out->size();
  out->resize(base + in.size() / 4 * 3 + (rest == 0 ? 0 : rest - 1));
  auto* dst = reinterpret_cast<unsigned char*>(out->data() + base);
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  const auto* full_end = src + (in.size() - rest);
  uint32_t bad = 0;  // bit 6 set once a byte outside the alphabet (64) was seen
  for (; src != full_end; src += 4, dst += 3) {
    const uint32_t a = kB64[src[0]], b = kB64[src[1]], c = kB64[src[2]], d = kB64[src[3]];
    bad |= a | b | c | d;
    const uint32_t w = (a << 18) | (b << 12) | (c << 6) | d;
    dst[0] = static_cast<unsigned char>(w >> 16);
    dst[1] = static_cast<unsigned char>(w >> 8);
    dst[2] = static_cast<unsigned char>(w);
  }
  // The last 2 or 3 characters give 1 or 2 bytes; their leftover bits must be zero, or two
  // different texts would decode to the same bytes.
  uint32_t leftover = 0;
  if (rest == 2) {
    const uint32_t a = kB64[src[0]], b = kB64[src[1]];
    bad |= a | b;
    dst[0] = static_cast<unsigned char>((a << 2) | (b >> 4));
    leftover = b & 0x0F;
  } else if (rest == 3) {
    const uint32_t a = kB64[src[0]], b = kB64[src[1]], c = kB64[src[2]];
    bad |= a | b | c;
    const uint32_t w = (a << 10) | (b << 4) | (c >> 2);
    dst[0] = static_cast<unsigned char>(w >> 8);
    dst[1] = static_cast<unsigned char>(w);
    leftover = c & 0x03;
  }
  if ((bad & 64) != 0 || leftover != 0) {
    out->resize(base);
    return false;
  }
  return true;
}

std::string_view parse_error_text(ParseError e) {
  switch (e) {
    case ParseError::kNone:
      return "ok";
    case ParseError::kTooLong:
      return "token too long";
    case ParseError::kSegments:
      return "not three segments";
    case ParseError::kBase64:
      return "invalid base64url";
    case ParseError::kHeaderJson:
      return "header is not a JSON object";
    case ParseError::kAlg:
      return "header has no alg string";
    case ParseError::kPayloadJson:
      return "payload is not a JSON object";
  }
  return "?";
}

namespace {

// The header's `alg`. A worker's tokens nearly all carry the same header text, so the last
// one that parsed is kept with its `alg`: the same text gives the same answer.
ParseError parse_header(std::string_view text, Token* out) {
  if (!out->header_text.empty() && text == out->header_text) {
    return ParseError::kNone;
  }
  out->header_text.clear();
  std::string& buf = out->signature;
  buf.clear();
  if (!base64url_decode(text, &buf)) {
    return ParseError::kBase64;
  }
  const JsonWanted header[] = {{"alg", &out->header_alg}};
  if (!scan_json_object(buf, header, &out->name)) {
    return ParseError::kHeaderJson;
  }
  if (out->header_alg.type != JsonValue::Type::kString) {
    return ParseError::kAlg;
  }
  out->alg.swap(out->header_alg.string);
  out->header_text.assign(text);
  return ParseError::kNone;
}

}  // namespace

ParseError parse(std::string_view token, Token* out, std::string_view key_claim_name) {
  out->payload.object = false;
  if (token.size() > kMaxTokenSize) {
    return ParseError::kTooLong;
  }
  const size_t d1 = token.find('.');
  const size_t d2 = d1 == std::string_view::npos ? d1 : token.find('.', d1 + 1);
  if (d2 == std::string_view::npos || token.find('.', d2 + 1) != std::string_view::npos) {
    return ParseError::kSegments;
  }
  out->signing_input = token.substr(0, d2);
  // Header and payload are decoded into `signature` first, then the signature over them.
  std::string& buf = out->signature;
  if (ParseError e = parse_header(token.substr(0, d1), out); e != ParseError::kNone) {
    return e;
  }
  buf.clear();
  if (!base64url_decode(token.substr(d1 + 1, d2 - d1 - 1), &buf)) {
    return ParseError::kBase64;
  }
  Payload& p = out->payload;
  const JsonWanted claims[] = {{key_claim_name, &p.key}, {"exp", &p.exp}, {"nbf", &p.nbf}};
  if (!scan_json_object(buf, claims, &out->name)) {
    return ParseError::kPayloadJson;
  }
  p.object = true;
  buf.clear();
  if (!base64url_decode(token.substr(d2 + 1), &buf)) {
    return ParseError::kBase64;
  }
  return ParseError::kNone;
}

StatusOr<Key> Key::make(Alg alg, std::string_view material) {
  Key k;
  k.alg_ = alg;
  if (is_hmac(alg)) {
    return make_hmac(alg, material);
  }
  BIO* bio = BIO_new_mem_buf(material.data(), static_cast<int>(material.size()));
  EVP_PKEY* pkey = bio != nullptr ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  ERR_clear_error();
  if (pkey == nullptr) {
    return Status::error("invalid public_key: not a PEM public key (-----BEGIN PUBLIC KEY-----)");
  }
  k.pkey_.reset(pkey, PkeyFree{});
  if (Status s = check_key_type(alg, pkey); !s.is_ok()) {
    return s;
  }
  return k;
}

bool Key::verify(std::string_view input, std::string_view sig) const {
  return is_hmac(alg_) ? verify_hmac(input, sig) : verify_pkey(input, sig);
}

StatusOr<Key> Key::make_hmac(Alg alg, std::string_view secret) {
  // RFC 2104: K' is the secret zero-padded to the hash's block, or its hash when longer;
  // HMAC = H((K' ^ opad) || H((K' ^ ipad) || text)). The two padded blocks are hashed here.
  const EVP_MD* md = digest(alg);
  const size_t block = static_cast<size_t>(EVP_MD_get_block_size(md));
  unsigned char k0[EVP_MAX_MD_SIZE * 2] = {0};  // 128: SHA-512's block
  unsigned char pad[EVP_MAX_MD_SIZE * 2];
  bool ok = block <= sizeof(k0);
  if (ok && secret.size() > block) {
    unsigned int len = 0;
    ok = EVP_Digest(secret.data(), secret.size(), k0, &len, md, nullptr) == 1;
  } else if (ok) {
    memcpy(k0, secret.data(), secret.size());
  }
  Key k;
  k.alg_ = alg;
  for (int i = 0; ok && i < 2; ++i) {
    const unsigned char x = i == 0 ? 0x36 : 0x5c;
    for (size_t j = 0; j < block; ++j) {
      pad[j] = k0[j] ^ x;
    }
    std::shared_ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new(), MdCtxFree{});
    ok = ctx != nullptr && EVP_DigestInit_ex(ctx.get(), md, nullptr) == 1 &&
         EVP_DigestUpdate(ctx.get(), pad, block) == 1;
    (i == 0 ? k.inner_ : k.outer_) = std::move(ctx);
  }
  OPENSSL_cleanse(k0, sizeof(k0));
  OPENSSL_cleanse(pad, sizeof(pad));
  if (!ok) {
    ERR_clear_error();
    return Status::error("cannot prepare the HMAC key");
  }
  return k;
}

namespace {

// The context verify_hmac() hashes in: one per thread, reused. (OpenSSL 3.0's copy still
// duplicates the provider's small hash state, one malloc and free per copy.)
struct ScratchMdCtx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~ScratchMdCtx() { EVP_MD_CTX_free(ctx); }
};

}  // namespace

bool Key::verify_hmac(std::string_view input, std::string_view sig) const {
  thread_local ScratchMdCtx scratch;
  EVP_MD_CTX* ctx = scratch.ctx;
  unsigned char inner[EVP_MAX_MD_SIZE];
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int inner_len = 0;
  unsigned int len = 0;
  const bool ok =
      ctx != nullptr && inner_ != nullptr && EVP_MD_CTX_copy_ex(ctx, inner_.get()) == 1 &&
      EVP_DigestUpdate(ctx, input.data(), input.size()) == 1 &&
      EVP_DigestFinal_ex(ctx, inner, &inner_len) == 1 &&
      EVP_MD_CTX_copy_ex(ctx, outer_.get()) == 1 && EVP_DigestUpdate(ctx, inner, inner_len) == 1 &&
      EVP_DigestFinal_ex(ctx, mac, &len) == 1;
  if (!ok) {
    ERR_clear_error();
    return false;
  }
  // The MAC's length is public (the algorithm's); its bytes are compared in constant time.
  return sig.size() == len && CRYPTO_memcmp(mac, sig.data(), len) == 0;
}

bool Key::verify_pkey(std::string_view input, std::string_view sig) const {
  std::string der;
  if (is_ec(alg_)) {
    if (!ecdsa_raw_to_der(alg_, sig, &der)) {
      return false;
    }
    sig = der;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) {
    ERR_clear_error();
    return false;
  }
  EVP_PKEY_CTX* pctx = nullptr;
  bool ok = EVP_DigestVerifyInit(ctx, &pctx, digest(alg_), nullptr, pkey_.get()) == 1;
  if (ok && is_pss(alg_)) {
    // RFC 7518 3.5: MGF1 with the same hash, salt as long as the hash.
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1 &&
         EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, digest(alg_)) == 1;
  }
  ok = ok &&
       EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                        reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  // A failed verification leaves errors in the thread's queue, where a TLS connection served
  // by the same worker would read them as its own (SSL_get_error).
  ERR_clear_error();
  return ok;
}

namespace {

// nginx's ngx.http_time: "Thu, 18 Nov 2010 11:27:35 GMT".
std::string http_time(double t) {
  time_t secs = t > 0 && t < 253402300799.0 ? static_cast<time_t>(t) : 0;
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  size_t n = strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

}  // namespace

bool check_claims(const Payload& payload, uint8_t claims, int64_t grace, int64_t now,
                  std::string* why) {
  using Type = JsonValue::Type;
  // APISIX's parser.lua verify_claims: nbf, then exp; a claim that is absent is not checked.
  for (uint8_t bit : {kClaimNbf, kClaimExp}) {
    if ((claims & bit) == 0) {
      continue;
    }
    const char* name = bit == kClaimNbf ? "nbf" : "exp";
    const JsonValue& claim = bit == kClaimNbf ? payload.nbf : payload.exp;
    if (claim.type == Type::kAbsent || claim.type == Type::kFalse) {
      continue;  // Lua's `if claim`: absent and false are skipped (null is cjson.null: checked)
    }
    if (claim.type != Type::kNumber) {
      *why = std::string("claim ") + name + " is not a number";
      return false;
    }
    const double v = claim.number;
    const double t = static_cast<double>(now);
    const double g = static_cast<double>(grace);
    if (bit == kClaimNbf && !(v < t + g)) {
      *why = "'nbf' claim not valid until " + http_time(v);
      return false;
    }
    if (bit == kClaimExp && !(v > t - g)) {
      *why = "'exp' claim expired at " + http_time(v);
      return false;
    }
  }
  return true;
}

}  // namespace sluice::plugins::jwt_auth
