// The secret fields' table and the walks over it.

#include "config/secret_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

// One encrypt_fields entry of an auth plugin, for both kinds that hold consumer-side confs.
#define PLUGIN_SECRET(plugin, field)                                                       \
  {"consumers", "plugins/" plugin "/" field, SecretGate::kEncryptFields, false, "data"}, { \
    "credentials", "plugins/" plugin "/" field, SecretGate::kEncryptFields, false, "data"  \
  }

constexpr SecretField kSecretFields[] = {
    {"ssls", "key", SecretGate::kKeyring, true, "ssl key"},
    {"ssls", "keys/*", SecretGate::kKeyring, true, "ssl key"},
    // An upstream's client key, sealed by APISIX's check_upstream_conf with the same
    // aes_encrypt_pkey as an ssl's (and read back by its fetch_pkey).
    {"upstreams", "tls/client_key", SecretGate::kKeyring, true, "ssl key"},
    {"routes", "upstream/tls/client_key", SecretGate::kKeyring, true, "ssl key"},
    {"services", "upstream/tls/client_key", SecretGate::kKeyring, true, "ssl key"},
    // Auth plugins' consumer-side `encrypt_fields` (APISIX's plugin.lua encrypt_conf), on
    // consumers and on their credentials alike (admin/credentials.lua checks them as
    // TYPE_CONSUMER). The rows are by plugin name: they apply whenever the plugin is built in.
    PLUGIN_SECRET("key-auth", "key"),
    PLUGIN_SECRET("basic-auth", "password"),
    PLUGIN_SECRET("jwt-auth", "secret"),
    PLUGIN_SECRET("jwt-auth", "private_key"),
    PLUGIN_SECRET("hmac-auth", "secret_key"),
};
#undef PLUGIN_SECRET
const SecretField& kSslKey = kSecretFields[0];

// The process's settings; set_data_encryption replaces both together.
// Thread: control
struct Settings {
  DataEncryptionConfig conf;
  Keyring keyring{conf.keyring};
};

Settings& settings() {
  static Settings s;
  return s;
}

bool gate_open(const SecretField& f) {
  return !keyring().empty() &&
         (f.gate == SecretGate::kKeyring || data_encryption().enable_encrypt_fields);
}

bool is_pem(std::string_view v) { return v.starts_with("---"); }

// Held in clear: PEM text, for a field that only ever seals PEM text; for another field, any
// value while its gate is shut (the next kinds' fields cannot tell sealed from clear by shape).
bool in_clear(const SecretField& f, const std::string& v) {
  return f.pem_only ? is_pem(v) : !gate_open(f);
}

// A secret value found by walk(): its field, its place, the value itself, and the member that
// holds it (the array, for "keys/*") with that member's name, for omit_clear_secrets.
struct Found {
  const SecretField& field;
  std::string where;  // "key", "keys[2]"
  Json& value;
  Json& holder;
  std::string member;
};

// Calls `fn` for every string value at `path` under `at`.
void walk_path(const SecretField& f, std::string_view path, Json& at, Json& holder,
               const std::string& member, const std::string& where,
               const std::function<void(Found)>& fn) {
  if (path.empty()) {
    if (at.is_string()) {
      fn(Found{f, where, at, holder, member});
    }
    return;
  }
  size_t slash = path.find('/');
  std::string_view seg = path.substr(0, slash);
  std::string_view rest = slash == std::string_view::npos ? "" : path.substr(slash + 1);
  if (seg == "*") {
    if (!at.is_array()) {
      return;
    }
    for (size_t i = 0; i < at.size(); ++i) {
      walk_path(f, rest, at[i], holder, member, fmt::format("{}[{}]", where, i + 1), fn);
    }
    return;
  }
  if (!at.is_object()) {
    return;
  }
  auto it = at.find(std::string(seg));
  if (it != at.end()) {
    std::string name(seg);
    walk_path(f, rest, *it, at, name, where.empty() ? name : where + "." + name, fn);
  }
}

void walk(std::string_view kind, Json& obj, const std::function<void(Found)>& fn) {
  for (const SecretField& f : kSecretFields) {
    if (f.kind == kind) {
      walk_path(f, f.path, obj, obj, "", "", fn);
    }
  }
}

bool looks_like_pem(std::string_view v) { return is_pem(v); }

// What a plugin field held before it was sealed came from a JSON string: UTF-8 text. A wrong
// key that happens to pass CBC's padding check yields bytes that almost never are.
bool valid_utf8(std::string_view v) {
  size_t i = 0;
  while (i < v.size()) {
    auto c = static_cast<unsigned char>(v[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (n == 0 || i + n > v.size()) {
      return false;
    }
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(v[i + k]) & 0xc0) != 0x80) {
        return false;
      }
    }
    i += n;
  }
  return true;
}

// The clear text of one stored value of `f`. A plugin field no key opens is taken as stored,
// as APISIX's decrypt_conf does (it logs and keeps the value): one written in clear before
// encryption was on keeps working.
StatusOr<std::string> reveal(const SecretField& f, const std::string& v) {
  if (is_secret_reference(v) || (f.pem_only && is_pem(v)) || !gate_open(f)) {
    return v;
  }
  if (!f.pem_only) {
    auto clear = keyring().decrypt(v, f.what, &valid_utf8);
    return clear.is_ok() ? std::move(clear).value() : v;
  }
  return keyring().decrypt(v, f.what, &looks_like_pem);
}

}  // namespace

std::span<const SecretField> secret_fields() { return kSecretFields; }

void set_data_encryption(const DataEncryptionConfig& conf) {
  settings().conf = conf;
  settings().keyring = Keyring(conf.keyring);
}

const DataEncryptionConfig& data_encryption() { return settings().conf; }

const Keyring& keyring() { return settings().keyring; }

bool is_secret_reference(std::string_view value) {
  return value.starts_with("$secret://") || value.starts_with("$env://");
}

Status seal_secrets(std::string_view kind, Json* obj) {
  Status st;
  walk(kind, *obj, [&](Found s) {
    const std::string& v = s.value.get_ref<const std::string&>();
    if (!st || !gate_open(s.field) || is_secret_reference(v) || (s.field.pem_only && !is_pem(v))) {
      return;
    }
    auto sealed = keyring().encrypt(v);
    if (!sealed) {
      st = Status::error(fmt::format("{}: {}", s.where, sealed.status().message()));
      return;
    }
    s.value = std::move(sealed).value();
  });
  return st;
}

StatusOr<std::string> reveal_pem(std::string_view value) {
  return reveal(kSslKey, std::string(value));
}

Status reveal_secrets(std::string_view kind, Json* obj) {
  Status st;
  walk(kind, *obj, [&](Found s) {
    if (!st) {
      return;
    }
    auto clear = reveal(s.field, s.value.get_ref<const std::string&>());
    if (!clear) {
      st = Status::error(fmt::format("{}: {}", s.where, clear.status().message()));
      return;
    }
    s.value = std::move(clear).value();
  });
  return st;
}

std::vector<std::string> clear_secrets(std::string_view kind, const Json& obj) {
  std::vector<std::string> out;
  Json copy = obj;
  walk(kind, copy, [&](Found s) {
    if (gate_open(s.field) && in_clear(s.field, s.value.get_ref<const std::string&>())) {
      out.push_back(s.where);
    }
  });
  return out;
}

std::string clear_secrets_note(std::string_view kind, const Json& obj) {
  std::vector<std::string> clear = clear_secrets(kind, obj);
  if (clear.empty()) {
    return "";
  }
  return fmt::format(
      "{} stored in clear although apisix.data_encryption.keyring is set: served as stored; "
      "write it again through the Admin API to store it encrypted",
      fmt::join(clear, ", "));
}

size_t redact_clear_secrets(std::string_view kind, Json* obj) {
  size_t n = 0;
  walk(kind, *obj, [&](Found s) {
    if (in_clear(s.field, s.value.get_ref<const std::string&>())) {
      s.value = std::string(kRedacted);
      ++n;
    }
  });
  return n;
}

size_t mask_secrets(std::string_view kind, Json* obj, std::string_view mask) {
  size_t n = 0;
  walk(kind, *obj, [&](Found s) {
    s.value = std::string(mask);
    ++n;
  });
  return n;
}

size_t omit_clear_secrets(std::string_view kind, Json* obj) {
  std::vector<std::pair<Json*, std::string>> doomed;
  walk(kind, *obj, [&](Found s) {
    // Private keys only: APISIX's admin answers plugin fields (clear when encryption is off).
    if (s.field.pem_only && in_clear(s.field, s.value.get_ref<const std::string&>())) {
      doomed.emplace_back(&s.holder, s.member);
    }
  });
  // Erased after the walk, which holds references into the members; a list loses all of
  // itself once, however many of its items were in clear.
  for (auto& [holder, member] : doomed) {
    if (holder->is_object()) {
      holder->erase(member);
    }
  }
  return doomed.size();
}

std::vector<std::string> redacted_secrets(std::string_view kind, const Json& obj) {
  std::vector<std::string> out;
  Json copy = obj;
  walk(kind, copy, [&](Found s) {
    if (s.value.get_ref<const std::string&>() == kRedacted) {
      out.push_back(s.where);
    }
  });
  return out;
}

Status reveal_document_secrets(Json* doc) {
  for (auto& [kind, items] : doc->items()) {
    for (size_t i = 0; items.is_array() && i < items.size(); ++i) {
      if (Status st = reveal_secrets(kind, &items[i]); !st) {
        return Status::error(fmt::format("{}[{}]: {}", kind, i, st.message()));
      }
    }
  }
  return Status::ok();
}

size_t redact_document_secrets(Json* doc) {
  size_t n = 0;
  for (auto& [kind, items] : doc->items()) {
    for (size_t i = 0; items.is_array() && i < items.size(); ++i) {
      n += redact_clear_secrets(kind, &items[i]);
    }
  }
  return n;
}

}  // namespace sluice::config
