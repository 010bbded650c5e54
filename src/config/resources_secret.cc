// decode_secret: the schemas of APISIX's secret managers, vault and aws.

#include <fmt/format.h>

#include <cctype>

#include "config/field_decoder.h"
#include "config/resources.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kUriPattern = R"(^[^\/]+:\/\/([\da-zA-Z.-]+|\[[\da-fA-F:]+\])(:\d+)?)";

// APISIX's uri_def, which is anchored at the start only: a scheme, `://` and a host.
bool matches_uri_def(std::string_view s) {
  size_t sep = s.find("://");
  if (sep == std::string_view::npos || sep == 0 || s.substr(0, sep).find('/') != s.npos) {
    return false;
  }
  std::string_view rest = s.substr(sep + 3);
  auto host_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
  };
  if (!rest.empty() && host_char(rest[0])) {
    return true;
  }
  size_t close = rest.find(']');
  if (rest.empty() || rest[0] != '[' || close == rest.npos || close < 2) {
    return false;
  }
  for (char c : rest.substr(1, close - 1)) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':') {
      return false;
    }
  }
  return true;
}

StatusOr<std::string> as_secret_uri(const Json& v) {
  auto s = as_string(v);
  if (s.is_ok() && !matches_uri_def(*s)) {
    return Status::error(fmt::format(R"(failed to match pattern "{}" with "{}")", kUriPattern, *s));
  }
  return s;
}

StatusOr<std::string> as_text(const Json& v) { return as_string(v); }

// `<manager>/<id>`, the id APISIX gives a secret.
StatusOr<std::string> as_secret_id(std::string_view manager, const Json& v) {
  auto s = as_string(v);
  if (!s.is_ok()) {
    return s;
  }
  std::string_view id = *s;
  if (!id.starts_with(manager) || id.substr(manager.size(), 1) != "/" ||
      !valid_id(std::string(id.substr(manager.size() + 1)))) {
    return Status::error(
        fmt::format(R"(failed to match pattern "^{}/[a-zA-Z0-9-_.]+$" with "{}")", manager, *s));
  }
  return s;
}

VaultSecretConf decode_vault(FieldDecoder& d) {
  VaultSecretConf v;
  d.only({"id", "create_time", "update_time", "uri", "prefix", "token", "namespace"});
  d.require({"uri", "prefix", "token"});
  d.field("uri", &v.uri, as_secret_uri);
  d.field("prefix", &v.prefix, as_text);
  d.field("token", &v.token, as_text);
  d.field("namespace", &v.namespace_, as_text);
  return v;
}

AwsSecretConf decode_aws(FieldDecoder& d) {
  AwsSecretConf a;
  d.only({"id", "create_time", "update_time", "access_key_id", "secret_access_key", "session_token",
          "region", "endpoint_url"});
  d.require({"access_key_id", "secret_access_key"});
  d.field("access_key_id", &a.access_key_id, as_text);
  d.field("secret_access_key", &a.secret_access_key, as_text);
  d.field("session_token", &a.session_token, as_text);
  d.field("region", &a.region, as_text);
  d.field("endpoint_url", &a.endpoint_url, as_secret_uri);
  return a;
}

StatusOr<SecretConf> decode_secret_fields(std::string_view manager, const Json& obj) {
  if (manager != "vault" && manager != "aws") {
    return Status::error(fmt::format("invalid secret manager: {}", manager));
  }
  SecretConf s;
  s.manager = std::string(manager);
  FieldDecoder d(obj);
  if (manager == "vault") {
    s.conf = decode_vault(d);
  } else {
    s.conf = decode_aws(d);
  }
  d.field("id", &s.id, [&](const Json& v) { return as_secret_id(manager, v); });
  d.field("create_time", &s.create_time, as_timestamp);
  d.field("update_time", &s.update_time, as_timestamp);
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  return s;
}

StatusOr<SecretConf> decode_secret_item_fields(const Json& obj) {
  std::string manager;
  if (obj.is_object() && obj.contains("id") && obj["id"].is_string()) {
    const std::string& id = obj["id"].get_ref<const std::string&>();
    manager = id.substr(0, id.find('/'));
  }
  if (manager.empty()) {
    FieldDecoder d(obj);
    d.field("id", &manager, [](const Json& v) { return as_secret_id("<manager>", v); });
    d.fail(R"(property "id" is required)");
    return invalid_configuration(d.status());
  }
  return decode_secret_fields(manager, obj);
}

}  // namespace

StatusOr<SecretConf> decode_secret(std::string_view manager, const Json& obj) {
  return no_throw([&] { return decode_secret_fields(manager, obj); });
}

StatusOr<SecretConf> decode_secret_item(const Json& obj) {
  return no_throw([&] { return decode_secret_item_fields(obj); });
}

}  // namespace sluice::config
