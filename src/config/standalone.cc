#include "config/standalone.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string_view>
#include <utility>

#include "config/env_subst.h"
#include "config/field_decoder.h"
#include "config/snapshot_builder.h"
#include "config/yaml_json.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kStandaloneSource = "apisix.yaml";

// How an item without its id key is named. APISIX (core/config_yaml.lua) names it
// `<kind>#<n>`, n counting from 1; where the id carries meaning (a consumer's username, the
// plugin a plugin_metadata item is for, a secret's manager) the id stays required.
enum class IdRule { kPositional, kRequired };

// APISIX looks for `#END\s*$`: anything after the marker but whitespace means a partial file.
bool has_end_marker(std::string_view text) {
  size_t end = text.find_last_not_of(" \t\r\n\f\v");
  if (end == std::string_view::npos || end + 1 < 4) {
    return false;
  }
  return text.substr(end + 1 - 4, 4) == "#END";
}

// `routes[2] (id "5")`; consumers are named by `username` instead of `id`.
std::string item_name(std::string_view kind, size_t index, const Json& item,
                      const std::string& id_key) {
  std::string name = fmt::format("{}[{}]", kind, index);
  if (item.is_object() && item.contains(id_key)) {
    const Json& id = item[id_key];
    name += fmt::format(" ({} {})", id_key,
                        id.is_string() ? json_text(id) : "\"" + json_text(id) + "\"");
  }
  return name;
}

// Decodes every item of one kind with `decode`, requiring unique ids (held in `id_key`).
// A consumers item whose `id` is `<username>/credentials/<id>` is a credential (APISIX 3.7+'s
// config_yaml.lua keys it /consumers/<id>, as etcd does); the split parts when it is one.
bool credential_item(const Json& item, std::string_view* user, std::string_view* id) {
  if (!item.is_object() || item.contains("username")) {
    return false;
  }
  auto it = item.find("id");
  return it != item.end() && it->is_string() &&
         split_credential_id(it->get_ref<const std::string&>(), user, id);
}

bool is_credential_item(const Json& item) {
  std::string_view user, id;
  return credential_item(item, &user, &id);
}

// Decodes every item of one kind with `decode`, requiring unique ids (held in `id_key`); items
// `skip` accepts are another decoder's.
template <typename T, typename F>
Status decode_kind(const Json& doc, std::string_view kind, std::vector<T>* out, F&& decode,
                   IdRule rule = IdRule::kPositional, const std::string& id_key = "id",
                   bool (*skip)(const Json&) = nullptr) {
  auto it = doc.find(std::string(kind));
  if (it == doc.end() || it->is_null()) {
    return Status::ok();
  }
  if (!it->is_array()) {
    return Status::error(
        fmt::format("{}: {}: {}", kStandaloneSource, kind, wrong_type("array", *it).message()));
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    if (skip != nullptr && skip(item)) {
      continue;
    }
    std::string name = item_name(kind, i, item, id_key);
    bool positional = item.is_object() && !item.contains(id_key);
    if (positional && rule == IdRule::kRequired) {
      return Status::error(fmt::format("{}: {}: missing {}", kStandaloneSource, name, id_key));
    }
    auto r = decode(item);
    if (!r.is_ok()) {
      return Status::error(
          fmt::format("{}: {}: {}", kStandaloneSource, name, r.status().message()));
    }
    if (positional) {
      // The `#` keeps it apart from any id a file can give (ids are [a-zA-Z0-9-_.]), so no
      // upstream_id or service_id can name it: as in APISIX, where the id schema refuses it.
      r->id = fmt::format("{}#{}", kind, i + 1);
    }
    auto [prev, fresh] = seen.emplace(r->id, i);
    if (!fresh) {
      return Status::error(fmt::format("{}: {}: duplicate id, also used by {}[{}]",
                                       kStandaloneSource, name, kind, prev->second));
    }
    out->push_back(std::move(r).value());
  }
  return Status::ok();
}

// The credentials among `consumers` items, each of a consumer the file holds. Their plugin
// fields are taken as written: APISIX decrypts encrypt_fields only with etcd (plugin.lua's
// enable_gde), never from apisix.yaml.
Status decode_credentials(const Json& doc, ConfigSet* set) {
  auto it = doc.find("consumers");
  if (it == doc.end() || !it->is_array()) {
    return Status::ok();  // decode_kind names what is wrong
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    std::string_view user, id;
    const Json& item = (*it)[i];
    if (!credential_item(item, &user, &id)) {
      continue;
    }
    std::string name = item_name("consumers", i, item, "id");
    Json body = item;
    body["id"] = std::string(id);
    auto c = decode_credential(body);
    if (!c.is_ok()) {
      return Status::error(
          fmt::format("{}: {}: {}", kStandaloneSource, name, c.status().message()));
    }
    bool known = std::any_of(set->consumers.begin(), set->consumers.end(),
                             [&](const ConsumerConf& k) { return k.username == user; });
    if (!known) {
      return Status::error(
          fmt::format("{}: {}: consumer not found: no consumers item has username \"{}\"",
                      kStandaloneSource, name, user));
    }
    auto [prev, fresh] = seen.emplace(item["id"].get<std::string>(), i);
    if (!fresh) {
      return Status::error(fmt::format("{}: {}: duplicate id, also used by consumers[{}]",
                                       kStandaloneSource, name, prev->second));
    }
    c->id = std::string(id);
    c->consumer = std::string(user);
    set->credentials.push_back(std::move(c).value());
  }
  return Status::ok();
}

// apisix.yaml names a plugin_metadata item by its plugin: `id` must be a string.
StatusOr<PluginMetadataConf> decode_metadata_item(const Json& item) {
  if (!item.is_object()) {
    return invalid_configuration(wrong_type("object", item));
  }
  const Json id = item.value("id", Json());
  if (!id.is_string()) {
    return invalid_configuration(property_error("id", wrong_type("string", id)));
  }
  return decode_plugin_metadata(id.get<std::string>(), item);
}

Status first_error(std::initializer_list<std::function<Status()>> steps) {
  for (const auto& step : steps) {
    Status s = step();
    if (!s.is_ok()) {
      return s;
    }
  }
  return Status::ok();
}

Status decode_linked_kinds(const Json& doc, ConfigSet* set) {
  return first_error({
      [&] { return decode_kind(doc, "upstreams", &set->upstreams, decode_upstream); },
      [&] { return decode_kind(doc, "services", &set->services, decode_service); },
      [&] { return decode_kind(doc, "routes", &set->routes, decode_route); },
  });
}

Status decode_other_kinds(const Json& doc, ConfigSet* set) {
  return first_error({
      [&] {
        return decode_kind(doc, "consumers", &set->consumers, decode_consumer, IdRule::kRequired,
                           "username", is_credential_item);
      },
      [&] { return decode_credentials(doc, set); },
      [&] { return decode_kind(doc, "ssls", &set->ssls, decode_ssl); },
      [&] { return decode_kind(doc, "global_rules", &set->global_rules, decode_global_rule); },
      [&] {
        return decode_kind(doc, "plugin_configs", &set->plugin_configs, decode_plugin_config);
      },
      [&] {
        return decode_kind(doc, "plugin_metadata", &set->plugin_metadata, decode_metadata_item,
                           IdRule::kRequired);
      },
      [&] { return decode_kind(doc, "stream_routes", &set->stream_routes, decode_stream_route); },
      [&] { return decode_kind(doc, "protos", &set->protos, decode_proto); },
      [&] {
        return decode_kind(doc, "consumer_groups", &set->consumer_groups, decode_consumer_group);
      },
      [&] {
        return decode_kind(doc, "secrets", &set->secrets, decode_secret_item, IdRule::kRequired);
      },
  });
}

// Kinds that are decoded and kept but that nothing serves yet are named, so that an operator
// does not take them for working. What is served is the snapshot builder's word.
void warn_not_served(ConfigSet* set) {
  for (const ConfigKind& kind : config_kinds()) {
    size_t n = kind.count(*set);
    if (!kind.served && n != 0) {
      set->warnings.push_back(
          fmt::format("{} ({} items) are stored but not served yet", kind.name, n));
    }
  }
}

Status check_top_level_keys(const Json& doc) {
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (const ConfigKind& kind : config_kinds()) {
      known = known || kind.name == key;
    }
    if (!known) {
      return Status::error(fmt::format("{}: unknown top-level key \"{}\"", kStandaloneSource, key));
    }
  }
  return Status::ok();
}

StatusOr<ConfigSet> decode_document(const Json& doc) {
  ConfigSet set;
  if (doc.is_null()) {
    return set;
  }
  if (!doc.is_object()) {
    return Status::error(fmt::format("{}: the top level must be a mapping, got {}",
                                     kStandaloneSource, json_type_name(doc)));
  }
  Status s = first_error({
      [&] { return check_top_level_keys(doc); },
      [&] { return decode_linked_kinds(doc, &set); },
      [&] { return decode_other_kinds(doc, &set); },
  });
  if (!s.is_ok()) {
    return s;
  }
  warn_not_served(&set);
  return set;
}

}  // namespace

StatusOr<ConfigSet> parse_standalone(const std::string& text) {
  if (!has_end_marker(text)) {
    return Status::error(
        "apisix.yaml: missing the #END line at the end (the file may be partly written)");
  }
  auto doc = load_config_document(text, kStandaloneSource);
  if (!doc.is_ok()) {
    return doc.status();
  }
  try {
    return decode_document(*doc);
  } catch (const std::exception& e) {
    return Status::error(fmt::format("{}: {}", kStandaloneSource, e.what()));
  }
}

}  // namespace sluice::config
