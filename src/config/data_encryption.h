#pragma once
// apisix.data_encryption: the keyring that encrypts secrets at rest (ssls' private keys, and
// later plugins' encrypt_fields), byte for byte as APISIX does, so that APISIX and Sluice nodes
// sharing etcd read each other's values.
//
// APISIX (apisix/core/data_encryption.lua, apisix/ssl.lua) uses lua-resty-string's resty.aes
// with each keyring entry as both the AES-128 key and the CBC IV, OpenSSL's PKCS#7 padding, and
// ngx.encode_base64 (standard alphabet, padded, one line). It encrypts with the first entry and
// decrypts by trying each entry in order.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::config {

// A keyring entry is exactly this many bytes: an AES-128 key, and its IV.
inline constexpr size_t kKeyringKeySize = 16;

// apisix.data_encryption in config.yaml, with APISIX 3.x's defaults (conf/config-default.yaml).
// Thread: any (value type)
struct DataEncryptionConfig {
  // Encrypt plugins' `encrypt_fields` (APISIX's plugin.lua enable_gde). SSL private keys do
  // not depend on it: APISIX encrypts them whenever the keyring has a key.
  bool enable_encrypt_fields = true;
  // First entry encrypts, every entry decrypts. Empty (`keyring: ~`): secrets stored as given.
  std::vector<std::string> keyring = {"qeddd145sfvddff3", "edd1c9f0985e76a2"};
  bool operator==(const DataEncryptionConfig&) const = default;
};

// Thread: any (immutable)
class Keyring {
 public:
  Keyring() = default;
  // Each entry must be kKeyringKeySize bytes (the config reader refuses others).
  explicit Keyring(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  bool empty() const { return keys_.empty(); }
  size_t size() const { return keys_.size(); }

  // base64(AES-128-CBC(clear)) under the first key. Fails on an empty keyring.
  common::StatusOr<std::string> encrypt(std::string_view clear) const;

  // The clear text of `encrypted` under the first key that decrypts it. A wrong key passes
  // CBC's padding check about once in 256 tries and yields garbage; when `accept` is given, a
  // result it refuses counts as a failure and the next key is tried. Errors read as APISIX's
  // with `what` in them: "base64 decode <what> failed", "decrypt <what> failed".
  common::StatusOr<std::string> decrypt(std::string_view encrypted, std::string_view what,
                                        bool (*accept)(std::string_view) = nullptr) const;

 private:
  std::vector<std::string> keys_;
};

// Standard base64 with padding on one line, as ngx.encode_base64 writes it.
std::string encode_base64(std::string_view in);
// The inverse; padding may be left out (ngx.decode_base64 takes both). False on any byte
// outside the alphabet, whitespace included.
bool decode_base64(std::string_view in, std::string* out);

}  // namespace sluice::config
