#include "config/upstream_tls.h"

#include <fmt/format.h>

#include "config/field_decoder.h"
#include "config/pem_check.h"
#include "config/secret_fields.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

// tls.ca_certs: PEM CA certificates, equal items allowed.
StatusOr<std::vector<std::string>> as_ca_certs(const Json& v) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = as_string(v[i], 128, 64 * 1024);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

// The schema's `dependencies`: client_cert and client_key come together, and neither with
// client_cert_id. The texts are the jsonschema library's.
void check_dependencies(FieldDecoder& d) {
  for (auto [field, other] :
       {std::pair{"client_cert", "client_key"}, std::pair{"client_key", "client_cert"}}) {
    if (!d.ok() || !d.has(field)) {
      continue;
    }
    if (!d.has(other)) {
      d.fail(
          fmt::format("failed to validate dependent schema for \"{}\": property \"{}\" is required",
                      field, other));
    } else if (d.has("client_cert_id")) {
      d.fail(fmt::format(
          "failed to validate dependent schema for \"{}\": value wasn't supposed to match schema",
          field));
    }
  }
}

}  // namespace

StatusOr<UpstreamTlsConf> decode_upstream_tls(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  UpstreamTlsConf t;
  FieldDecoder d(v);
  d.only({"client_cert", "client_key", "client_cert_id", "verify", "ca_certs"});
  d.field("client_cert_id", &t.client_cert_id, as_id);
  d.field("client_cert", &t.client_cert, as_pem_field);
  d.field("client_key", &t.client_key, as_pem_field);
  d.field("verify", &t.verify, as_bool);
  d.field("ca_certs", &t.ca_certs, as_ca_certs);
  check_dependencies(d);
  if (!d.ok()) {
    return d.status();
  }
  // A key sealed at rest becomes its PEM again (APISIX's fetch_pkey); a failure is reported
  // after the schema, by check_upstream_tls, as APISIX's validate reports it.
  if (!t.client_key.empty()) {
    auto clear = reveal_pem(t.client_key);
    if (clear.is_ok()) {
      t.client_key = std::move(clear).value();
    } else {
      t.client_key_error = clear.status().message();
    }
  }
  return t;
}

Status check_upstream_tls(const UpstreamConf& u) {
  if (!u.tls) {
    return Status::ok();
  }
  if (u.scheme != "https" && u.scheme != "grpcs") {
    return Status::error(fmt::format(
        "tls needs scheme \"https\" or \"grpcs\" (the upstream's scheme is \"{}\"): Sluice "
        "makes TLS connections to https and grpcs upstreams only, so its client certificate and "
        "verification would never apply",
        u.scheme));
  }
  const UpstreamTlsConf& t = *u.tls;
  for (size_t i = 0; i < t.ca_certs.size(); ++i) {
    if (Status st = check_certificate_pem(t.ca_certs[i]); !st.is_ok()) {
      return Status::error(fmt::format("tls.ca_certs[{}]: {}", i + 1, st.message()));
    }
  }
  // APISIX's ssl.validate order: the certificate, then the key decrypted, then parsed.
  if (!t.client_cert.empty() && !is_reference(t.client_cert)) {
    if (Status st = check_certificate_pem(t.client_cert); !st.is_ok()) {
      return st;
    }
  }
  if (!t.client_key_error.empty()) {
    return Status::error("failed to decrypt previous encrypted key: " + t.client_key_error);
  }
  if (t.client_cert.empty() || is_reference(t.client_cert) || is_reference(t.client_key)) {
    return Status::ok();  // a reference is checked when it is read
  }
  if (Status st = check_private_key_pem(t.client_key); !st.is_ok()) {
    return st;
  }
  if (Status st = check_cert_key_pair(t.client_cert, t.client_key); !st.is_ok()) {
    return Status::error("failed to handle cert-key pair: " + st.message());
  }
  return Status::ok();
}

}  // namespace sluice::config
