// decode_credential: a consumer's credential (APISIX 3.7+, schema_def.lua's `credential` and
// admin/credentials.lua's check_conf), and the key layout that places it under its consumer.

#include <fmt/format.h>

#include "config/field_decoder.h"
#include "config/plugin_registry.h"
#include "config/resources.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr std::string_view kCredentialsSegment = "/credentials/";

// APISIX's credential schema: `plugins` is `{type = "object", maxProperties = 1}`, one auth
// plugin per credential.
StatusOr<Json> as_credential_plugins(const Json& v) {
  auto obj = as_object(v);
  if (obj.is_ok() && obj->size() > 1) {
    return Status::error("expect object to have at most 1 properties");
  }
  return obj;
}

StatusOr<CredentialConf> decode_credential_fields(const Json& obj,
                                                  std::span<const PluginInfo> registry) {
  CredentialConf c;
  FieldDecoder d(obj);
  d.only({"id", "name", "desc", "labels", "plugins", "create_time", "update_time"});
  decode_common_fields(d, &c);
  d.field("plugins", &c.plugins, as_credential_plugins);
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  if (c.plugins.is_null()) {
    return c;
  }
  // APISIX checks the confs first (unknown names included), then that each is an auth plugin.
  if (Status s = check_plugins(c.plugins, PluginUse::kConsumer, registry); !s.is_ok()) {
    return Status::error("invalid plugins configuration: " + s.message());
  }
  for (const auto& [name, conf] : c.plugins.items()) {
    const PluginInfo* info = find_plugin(name, registry);
    if (info == nullptr || !info->auth) {
      return Status::error("only supports auth type plugins in consumer credential");
    }
  }
  return c;
}

}  // namespace

StatusOr<CredentialConf> decode_credential(const Json& obj) {
  return decode_credential(obj, all_plugins());
}

StatusOr<CredentialConf> decode_credential(const Json& obj, std::span<const PluginInfo> registry) {
  return no_throw([&] { return decode_credential_fields(obj, registry); });
}

bool split_credential_id(std::string_view id, std::string_view* consumer,
                         std::string_view* credential) {
  size_t at = id.find(kCredentialsSegment);
  if (at == std::string_view::npos || at == 0) {
    return false;
  }
  std::string_view user = id.substr(0, at);
  std::string_view cred = id.substr(at + kCredentialsSegment.size());
  if (user.find('/') != std::string_view::npos || cred.empty() ||
      cred.find('/') != std::string_view::npos) {
    return false;
  }
  *consumer = user;
  *credential = cred;
  return true;
}

std::string credential_id(std::string_view consumer, std::string_view credential) {
  return fmt::format("{}{}{}", consumer, kCredentialsSegment, credential);
}

}  // namespace sluice::config
