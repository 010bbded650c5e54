#include "config/plugin_registry.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/field_decoder.h"
#include "plugins/builtin.h"
#include "router/expr.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

// The enabled subset of plugins::builtin(), highest priority first.
std::vector<PluginInfo>& enabled() {
  static std::vector<PluginInfo> list(plugins::builtin().begin(), plugins::builtin().end());
  return list;
}

StatusOr<Json> as_error_response(const Json& v) {
  if (!v.is_string() && !v.is_object()) {
    return Status::error("value should match only one schema, but matches none");
  }
  return v;
}

// APISIX injects `_meta` into every plugin's schema; Sluice refuses the keys it does not know
// rather than ignoring them.
Status check_meta(const Json& meta) {
  FieldDecoder d(meta);
  d.only({"disable", "error_response", "priority", "filter"});
  bool disable = false;
  Json unused;
  int64_t priority = 0;
  d.field("disable", &disable, as_bool);
  d.field("error_response", &unused, as_error_response);
  d.field("priority", &priority, [](const Json& v) { return as_integer(v); });
  Json filter;
  d.field("filter", &filter, as_array);
  if (!d.ok()) {
    return property_error("_meta", d.status());
  }
  if (!filter.is_null()) {
    if (auto e = router::Expr::compile(filter); !e.is_ok()) {
      return e.status();  // APISIX: "failed to validate the 'vars' expression: ..." as is
    }
  }
  return Status::ok();
}

Status check_one(const std::string& name, const Json& conf, PluginUse use,
                 std::span<const PluginInfo> registry) {
  if (!conf.is_object()) {
    return Status::error(
        fmt::format("invalid plugin conf {} for plugin [{}]", json_text(conf), name));
  }
  const PluginInfo* info = find_plugin(name, registry);
  if (info == nullptr || (use == PluginUse::kStream && !info->stream)) {
    return Status::error(fmt::format("unknown plugin [{}]", name));
  }
  Status s;
  auto meta = conf.find("_meta");
  if (meta != conf.end()) {
    s = check_meta(*meta);
  }
  if (s.is_ok() && info->check != nullptr) {
    Json bare = conf;
    bare.erase("_meta");
    s = info->check(bare, use);
  }
  if (!s.is_ok()) {
    return Status::error(
        fmt::format("failed to check the configuration of plugin {} err: {}", name, s.message()));
  }
  return Status::ok();
}

}  // namespace

std::span<const PluginInfo> all_plugins() { return enabled(); }

std::vector<std::string> set_enabled_plugins(const std::vector<std::string>* names) {
  std::vector<std::string> unknown;
  std::vector<PluginInfo> list;
  for (const PluginInfo& p : plugins::builtin()) {
    if (names == nullptr || std::find(names->begin(), names->end(), p.name) != names->end()) {
      list.push_back(p);
    }
  }
  if (names != nullptr) {
    for (const std::string& n : *names) {
      if (find_plugin(n, plugins::builtin()) == nullptr) {
        unknown.push_back(n);
      }
    }
  }
  enabled() = std::move(list);
  return unknown;
}

const PluginInfo* find_plugin(std::string_view name) { return find_plugin(name, all_plugins()); }

const PluginInfo* find_plugin(std::string_view name, std::span<const PluginInfo> registry) {
  for (const PluginInfo& p : registry) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

Status check_plugins(const Json& plugins, PluginUse use) {
  return check_plugins(plugins, use, all_plugins());
}

Status check_plugins(const Json& plugins, PluginUse use, std::span<const PluginInfo> registry) {
  if (!plugins.is_object()) {
    return invalid_configuration(property_error("plugins", wrong_type("object", plugins)));
  }
  return no_throw([&] {
    for (const auto& [name, conf] : plugins.items()) {
      Status s = check_one(name, conf, use, registry);
      if (!s.is_ok()) {
        return s;
      }
    }
    return Status::ok();
  });
}

Status check_plugin_metadata(std::string_view name, const Json& conf,
                             std::span<const PluginInfo> registry) {
  const PluginInfo* info = find_plugin(name, registry);
  if (info == nullptr) {
    return Status::error(fmt::format("unknown plugin [{}]", name));
  }
  if (!conf.is_object()) {
    return invalid_configuration(wrong_type("object", conf));
  }
  if (info->check == nullptr) {
    return Status::ok();
  }
  return no_throw([&] {
    Status s = info->check(conf, PluginUse::kMetadata);
    return s.is_ok() ? s : invalid_configuration(s);
  });
}

}  // namespace sluice::config
