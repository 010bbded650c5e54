#pragma once
// Secrets at rest: which fields of which resource kinds hold secrets, and the four things done
// with them. The Admin API and `sluice config load` seal them before writing; decoders reveal
// them (a decoded SslConf holds PEM text); `sluice config dump` redacts what is in clear; the
// Admin API's answers omit private keys held in clear. Everything is driven by secret_fields(),
// so a kind gains encryption by gaining a row there: auth plugins' encrypt_fields on consumers
// and credentials (kind "credentials") are rows too.

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/data_encryption.h"
#include "config/resources.h"

namespace sluice::config {

// When a field is encrypted.
enum class SecretGate {
  kKeyring,        // whenever the keyring has a key (APISIX's ssl.lua, for ssls' keys)
  kEncryptFields,  // also needs enable_encrypt_fields (APISIX's plugin.lua, encrypt_fields)
};

// Thread: any (immutable)
struct SecretField {
  std::string_view kind;  // the Admin API's resource name: "ssls"
  std::string_view path;  // "key"; "keys/*" is every element of the array `keys`
  SecretGate gate;
  // Only PEM text (starting with "---", APISIX's test) is sealed; any other value (one sealed
  // already, a $secret:// reference) is stored as given and read as PEM if it starts so.
  bool pem_only;
  std::string_view what;  // in messages, as APISIX words it: "ssl key"
};

// Every secret field, by kind.
std::span<const SecretField> secret_fields();

// The process's apisix.data_encryption; APISIX's defaults until set. Set on the control thread
// at start and on SIGHUP, read by the decoders and the Admin API on that thread.
// Thread: control (and single-threaded tools: tests, `sluice config`)
void set_data_encryption(const DataEncryptionConfig& conf);
const DataEncryptionConfig& data_encryption();
const Keyring& keyring();

// `$secret://...` and `$env://...` stand for a value fetched later; they are never sealed.
bool is_secret_reference(std::string_view value);

// Encrypts, in `obj` (a resource of `kind`), every secret due for it under the keyring's first
// key. Never seals a value twice: a pem_only value that is not PEM text is left as it is.
common::Status seal_secrets(std::string_view kind, Json* obj);

// The PEM text of an ssl private key as stored: PEM text and references come back unchanged,
// and so does everything when the keyring is empty; anything else is decrypted with each key
// in turn (APISIX's aes_decrypt_pkey). Errors: "base64 decode ssl key failed", "decrypt ssl key
// failed".
common::StatusOr<std::string> reveal_pem(std::string_view value);

// Decrypts every secret of `obj` in place (`sluice config dump --show-secrets`; consumers'
// and credentials' plugin fields wherever a store's value is read, and in the Admin API's GET
// answers, as APISIX's admin/init.lua decrypts them). The error names the field:
// `keys[2]: decrypt ssl key failed`; a plugin field that no key opens is kept as stored (APISIX
// logs it and uses the value), so this never fails for consumers and credentials.
common::Status reveal_secrets(std::string_view kind, Json* obj);

// The secrets of `obj` held in clear where the keyring would seal them (`key`, `keys[1]`): a
// value stored by a node without a keyring, or before encryption was on.
std::vector<std::string> clear_secrets(std::string_view kind, const Json& obj);

// clear_secrets as a sentence for the log, or empty when there are none.
std::string clear_secrets_note(std::string_view kind, const Json& obj);

// What `sluice config dump` prints in place of a private key held in clear.
inline constexpr std::string_view kRedacted =
    "<redacted by sluice config dump: --show-secrets prints it>";

// Replaces every secret of `obj` held in clear by kRedacted; returns how many.
size_t redact_clear_secrets(std::string_view kind, Json* obj);

// Replaces every secret of `obj`, sealed or in clear, by `mask` (the Admin API's audit log);
// returns how many.
size_t mask_secrets(std::string_view kind, Json* obj, std::string_view mask);

// Removes from `obj` every private key held in clear (for a list, the whole list), as the
// Admin API answers; returns how many were in clear. Plugin fields are answered as APISIX
// answers them, never omitted.
size_t omit_clear_secrets(std::string_view kind, Json* obj);

// The fields of `obj` that hold kRedacted, for `sluice config load` to refuse.
std::vector<std::string> redacted_secrets(std::string_view kind, const Json& obj);

// reveal_secrets and redact_clear_secrets over an apisix.yaml-shaped document ({kind: [items]}),
// for `sluice config dump`. Errors name the item: `ssls[0]: key: decrypt ssl key failed`.
common::Status reveal_document_secrets(Json* doc);
size_t redact_document_secrets(Json* doc);

}  // namespace sluice::config
