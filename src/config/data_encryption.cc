// The keyring's cipher: OpenSSL's EVP AES-128-CBC, as lua-resty-string's resty.aes drives it.

#include "config/data_encryption.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <memory>

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// One pass of AES-128-CBC with `key` as key and IV. False on a padding that does not check
// out (decrypting) or an OpenSSL failure; OpenSSL's error queue is left empty either way, so
// that a failed try does not surface in an unrelated later TLS call.
bool run_cipher(bool encrypting, const std::string& key, std::string_view in, std::string* out) {
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  int n = 0, last = 0;
  out->assign(in.size() + EVP_MAX_BLOCK_LENGTH, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out->data());
  bool ok = ctx != nullptr &&
            EVP_CipherInit_ex(ctx.get(), EVP_aes_128_cbc(), nullptr, bytes(key), bytes(key),
                              encrypting ? 1 : 0) == 1 &&
            EVP_CipherUpdate(ctx.get(), o, &n, bytes(in), static_cast<int>(in.size())) == 1 &&
            EVP_CipherFinal_ex(ctx.get(), o + n, &last) == 1;
  ERR_clear_error();
  out->resize(ok ? static_cast<size_t>(n + last) : 0);
  return ok;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  return c == '+' ? 62 : (c == '/' ? 63 : -1);
}

}  // namespace

StatusOr<std::string> Keyring::encrypt(std::string_view clear) const {
  if (keys_.empty()) {
    return Status::error("no keyring configured");
  }
  std::string sealed;
  if (clear.size() > (1u << 30) || !run_cipher(true, keys_.front(), clear, &sealed)) {
    return Status::error("failed to encrypt");
  }
  return encode_base64(sealed);
}

StatusOr<std::string> Keyring::decrypt(std::string_view encrypted, std::string_view what,
                                       bool (*accept)(std::string_view)) const {
  std::string what_ = what.empty() ? std::string() : std::string(what) + " ";
  std::string sealed;
  if (!decode_base64(encrypted, &sealed)) {
    return Status::error("base64 decode " + what_ + "failed");
  }
  std::string clear;
  for (const std::string& key : keys_) {
    if (run_cipher(false, key, sealed, &clear) && (accept == nullptr || accept(clear))) {
      return clear;
    }
  }
  return Status::error("decrypt " + what_ + "failed");
}

std::string encode_base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes(in),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool decode_base64(std::string_view in, std::string* out) {
  size_t len = in.size();
  for (int pad = 0; pad < 2 && len > 0 && in[len - 1] == '='; ++pad) {
    --len;
  }
  if (len % 4 == 1) {
    return false;  // one sextet cannot end a byte
  }
  out->clear();
  out->reserve(len * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; ++i) {
    int v = base64_value(in[i]);
    if (v < 0) {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

}  // namespace sluice::config
