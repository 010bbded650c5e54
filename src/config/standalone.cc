#include "config/standalone.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "config/env_subst.h"
#include "config/field_decoder.h"
#include "config/yaml_json.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kSource = "apisix.yaml";

// Kinds APISIX's standalone mode knows that Sluice does not serve yet.
constexpr std::string_view kNotServed[] = {
    "consumers",     "ssls",   "global_rules",    "plugin_configs", "plugin_metadata",
    "stream_routes", "protos", "consumer_groups", "secrets"};

// APISIX looks for `#END\s*$`: anything after the marker but whitespace means a partial file.
bool has_end_marker(std::string_view text) {
  size_t end = text.find_last_not_of(" \t\r\n\f\v");
  if (end == std::string_view::npos || end + 1 < 4) {
    return false;
  }
  return text.substr(end + 1 - 4, 4) == "#END";
}

std::string item_name(std::string_view kind, size_t index, const Json& item) {
  std::string name = fmt::format("{}[{}]", kind, index);
  if (item.is_object() && item.contains("id")) {
    const Json& id = item["id"];
    name += fmt::format(" (id {})", id.is_string() ? json_text(id) : "\"" + json_text(id) + "\"");
  }
  return name;
}

// Decodes every item of one kind with `decode`, requiring unique ids.
template <typename T, typename F>
Status decode_kind(const Json& doc, std::string_view kind, std::vector<T>* out, F&& decode) {
  auto it = doc.find(std::string(kind));
  if (it == doc.end() || it->is_null()) {
    return Status::ok();
  }
  if (!it->is_array()) {
    return Status::error(
        fmt::format("{}: {}: {}", kSource, kind, wrong_type("array", *it).message()));
  }
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& item = (*it)[i];
    std::string name = item_name(kind, i, item);
    if (item.is_object() && !item.contains("id")) {
      return Status::error(fmt::format("{}: {}: missing id", kSource, name));
    }
    auto r = decode(item);
    if (!r.is_ok()) {
      return Status::error(fmt::format("{}: {}: {}", kSource, name, r.status().message()));
    }
    auto [prev, fresh] = seen.emplace(r->id, i);
    if (!fresh) {
      return Status::error(fmt::format("{}: {}: duplicate id, also used by {}[{}]", kSource, name,
                                       kind, prev->second));
    }
    out->push_back(std::move(r).value());
  }
  return Status::ok();
}

Status check_not_served(const Json& doc, ConfigSet* set) {
  for (auto kind : kNotServed) {
    auto it = doc.find(std::string(kind));
    if (it == doc.end() || it->is_null()) {
      continue;
    }
    if (!it->is_array()) {
      return Status::error(
          fmt::format("{}: {}: {}", kSource, kind, wrong_type("array", *it).message()));
    }
    if (!it->empty()) {
      set->warnings.push_back(fmt::format("{}: {} ({} items) are not served yet and are ignored",
                                          kSource, kind, it->size()));
    }
  }
  return Status::ok();
}

Status check_top_level_keys(const Json& doc) {
  for (const auto& [key, value] : doc.items()) {
    bool known = key == "routes" || key == "services" || key == "upstreams";
    for (auto kind : kNotServed) {
      known = known || kind == key;
    }
    if (!known) {
      return Status::error(fmt::format("{}: unknown top-level key \"{}\"", kSource, key));
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
    return Status::error(
        fmt::format("{}: the top level must be a mapping, got {}", kSource, json_type_name(doc)));
  }
  Status s = check_top_level_keys(doc);
  if (s.is_ok()) {
    s = decode_kind(doc, "upstreams", &set.upstreams, decode_upstream);
  }
  if (s.is_ok()) {
    s = decode_kind(doc, "services", &set.services, decode_service);
  }
  if (s.is_ok()) {
    s = decode_kind(doc, "routes", &set.routes, decode_route);
  }
  if (s.is_ok()) {
    s = check_not_served(doc, &set);
  }
  if (!s.is_ok()) {
    return s;
  }
  return set;
}

}  // namespace

StatusOr<ConfigSet> parse_standalone(const std::string& text) {
  if (!has_end_marker(text)) {
    return Status::error(
        "apisix.yaml: missing the #END line at the end (the file may be partly written)");
  }
  auto doc = load_config_document(text, kSource);
  if (!doc.is_ok()) {
    return doc.status();
  }
  try {
    return decode_document(*doc);
  } catch (const std::exception& e) {
    return Status::error(fmt::format("{}: {}", kSource, e.what()));
  }
}

}  // namespace sluice::config
