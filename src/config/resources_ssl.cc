// decode_ssl: APISIX 3.x's ssl schema, plus the checks its admin makes after the schema
// (pairs of certs and keys, PEMs that parse, each key matching its certificate).

#include <fmt/format.h>

#include <string_view>

#include "config/field_decoder.h"
#include "config/pem_check.h"
#include "config/resources.h"
#include "config/secret_fields.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

bool is_reference(std::string_view s) { return is_secret_reference(s); }

StatusOr<std::string> as_pem_field(const Json& v) {
  if (v.is_string() && is_reference(v.get_ref<const std::string&>())) {
    return v.get<std::string>();
  }
  return as_string(v, 128, 64 * 1024);
}

namespace {

// An array of PEMs; unlike as_string_array, equal items are allowed.
StatusOr<std::vector<std::string>> as_pem_array(const Json& v) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = as_pem_field(v[i]);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

// Unique items from a three-value enum: APISIX's maxItems 3 follows.
StatusOr<std::vector<std::string>> as_ssl_protocols(const Json& v) {
  return as_string_array(
      v,
      [](const Json& x) {
        return as_enum(x, {"TLSv1.1", "TLSv1.2", "TLSv1.3"});
      },
      0);
}

StatusOr<SslClientConf> as_ssl_client(const Json& v) {
  SslClientConf c;
  FieldDecoder d(v);
  d.only({"ca", "depth", "skip_mtls_uri_regex"});
  d.require({"ca"});
  d.field("ca", &c.ca, as_pem_field);
  d.field("depth", &c.depth, [](const Json& x) { return as_integer(x, 0); });
  d.field("skip_mtls_uri_regex", &c.skip_mtls_uri_regex, [](const Json& x) {
    return as_string_array(x, [](const Json& y) { return as_string(y); });
  });
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

StatusOr<SslType> as_ssl_type(const Json& v) {
  auto s = as_enum(v, {"server", "client"});
  if (!s.is_ok()) {
    return s.status();
  }
  return *s == "client" ? SslType::kClient : SslType::kServer;
}

StatusOr<std::vector<std::string>> as_one_sni(const Json& v) {
  auto s = as_sni(v);
  if (!s.is_ok()) {
    return s.status();
  }
  return std::vector<std::string>{std::move(s).value()};
}

void decode_ssl_properties(FieldDecoder& d, SslConf* s) {
  d.field("id", &s->id, as_id);
  d.field("type", &s->type, as_ssl_type);
  d.field("cert", &s->cert, as_pem_field);
  d.field("key", &s->key, as_pem_field);
  d.field("sni", &s->snis, as_one_sni);
  d.field("snis", &s->snis, [](const Json& v) { return as_string_array(v, as_sni); });
  d.field("certs", &s->certs, as_pem_array);
  d.field("keys", &s->keys, as_pem_array);
  d.field("client", &s->client, as_ssl_client);
  d.field("labels", &s->labels, as_labels);
  d.field("status", &s->status, as_enable_status);
  d.field("ssl_protocols", &s->ssl_protocols, as_ssl_protocols);
  d.field("validity_start", &s->validity_start, as_timestamp);
  d.field("validity_end", &s->validity_end, as_timestamp);
  d.field("create_time", &s->create_time, as_timestamp);
  d.field("update_time", &s->update_time, as_timestamp);
}

// A server certificate needs cert, key and exactly one of sni and snis; a client one needs
// cert and key.
void check_ssl_shape(FieldDecoder& d, const SslConf& s) {
  if (s.type == SslType::kClient) {
    d.require({"cert", "key"});
    return;
  }
  if (d.has("sni") && d.has("snis")) {
    d.fail(fmt::format("{}both schemas 1 and 2 (sni and snis are mutually exclusive)",
                       kOnlyOneSchema));
  }
  if (!d.has("cert") || !d.has("key") || (!d.has("sni") && !d.has("snis"))) {
    d.fail(std::string(kOnlyOneSchema) +
           "none (a server certificate needs cert, key, and sni or snis)");
  }
}

// A reference's PEM is checked when it is fetched, not here.
Status check_cert(const std::string& pem) {
  return is_reference(pem) ? Status::ok() : check_certificate_pem(pem);
}

Status check_key(const std::string& pem) {
  return is_reference(pem) ? Status::ok() : check_private_key_pem(pem);
}

// A key sealed with apisix.data_encryption's keyring becomes its PEM again (APISIX's
// aes_decrypt_pkey in ssl.validate), so a decoded SslConf always holds PEM text.
Status reveal_key(std::string* key) {
  auto clear = reveal_pem(*key);
  if (!clear.is_ok()) {
    return Status::error("failed to decrypt previous encrypted key: " + clear.status().message());
  }
  *key = std::move(clear).value();
  return Status::ok();
}

// Each half parses, the key once revealed; errors read as APISIX's ("failed to parse cert:
// ...", "failed to decrypt previous encrypted key").
Status check_pair(const std::string& cert, std::string* key) {
  Status s = check_cert(cert);
  if (s.is_ok()) {
    s = reveal_key(key);
  }
  return s.is_ok() ? check_key(*key) : s;
}

// Run after check_pair, so the only error left is a key that is not the certificate's.
Status check_match(const std::string& cert, const std::string& key) {
  if (is_reference(cert) || is_reference(key)) {
    return Status::ok();
  }
  return check_cert_key_pair(cert, key);
}

// APISIX's ssl.check_ssl_conf after the schema; its errors carry no prefix.
Status check_ssl_pems(SslConf& s) {
  Status st = check_pair(s.cert, &s.key);
  if (!st.is_ok()) {
    return st;
  }
  st = check_match(s.cert, s.key);
  if (!st.is_ok()) {
    return Status::error("failed to handle cert-key pair: " + st.message());
  }
  if (s.client) {
    st = check_cert(s.client->ca);
    if (!st.is_ok()) {
      return Status::error("failed to validate client_cert: " + st.message());
    }
  }
  if (s.type == SslType::kClient) {
    return Status::ok();
  }
  if (s.certs.size() != s.keys.size()) {
    return Status::error("mismatched number of certs and keys");
  }
  for (size_t i = 0; i < s.certs.size(); ++i) {
    st = check_pair(s.certs[i], &s.keys[i]);
    if (st.is_ok()) {
      st = check_match(s.certs[i], s.keys[i]);
    }
    if (!st.is_ok()) {
      return Status::error(
          fmt::format("failed to handle cert-key pair[{}]: {}", i + 1, st.message()));
    }
  }
  return Status::ok();
}

StatusOr<SslConf> decode_ssl_fields(const Json& obj) {
  SslConf s;
  FieldDecoder d(obj);
  d.only({"id", "type", "cert", "key", "sni", "snis", "certs", "keys", "client", "labels", "status",
          "ssl_protocols", "validity_start", "validity_end", "create_time", "update_time"});
  decode_ssl_properties(d, &s);
  check_ssl_shape(d, s);
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  Status st = check_ssl_pems(s);
  if (!st.is_ok()) {
    return st;
  }
  return s;
}

}  // namespace

StatusOr<SslConf> decode_ssl(const Json& obj) {
  return no_throw([&] { return decode_ssl_fields(obj); });
}

}  // namespace sluice::config
