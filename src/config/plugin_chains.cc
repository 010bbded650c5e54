#include "config/plugin_chains.h"

#include <fmt/format.h>

#include "config/plugin_registry.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;
using ChainPtr = std::shared_ptr<const plugin::Chain>;

Json merge_plugins(std::initializer_list<const Json*> lowest_first) {
  Json out = Json::object();
  for (const Json* p : lowest_first) {
    if (p == nullptr || !p->is_object()) {
      continue;
    }
    for (const auto& [name, conf] : p->items()) {
      out[name] = conf;
    }
  }
  return out;
}

namespace {

// `_meta` as the chain entry keeps it; the conf was checked by check_plugins.
Status apply_meta(const Json& meta, plugin::Entry* e, bool* disabled) {
  *disabled = meta.value("disable", false);
  if (auto p = meta.find("priority"); p != meta.end() && p->is_number_integer()) {
    e->priority = p->get<int>();
  }
  if (auto f = meta.find("filter"); f != meta.end() && !f->is_null()) {
    auto expr = router::Expr::compile(*f);
    if (!expr.is_ok()) {
      return expr.status();
    }
    e->filter = std::move(expr).value();
    e->has_filter = true;
  }
  if (auto r = meta.find("error_response"); r != meta.end()) {
    e->has_error_response = true;
    e->error_response = r->is_string() ? r->get<std::string>() : r->dump() + "\n";
  }
  return Status::ok();
}

// Adds `plugins`' entries to `out`.
Status add_entries(const Json& plugins, std::string_view owner, plugin::Shared& shared,
                   std::vector<std::string>* warnings, std::vector<plugin::Entry>* out) {
  for (const auto& [name, conf] : plugins.items()) {
    const PluginInfo* info = find_plugin(name);
    if (info == nullptr || info->make == nullptr) {
      warnings->push_back(fmt::format("{}: plugin {} is not enabled; it is skipped", owner, name));
      continue;
    }
    plugin::Entry e;
    e.name = name;
    e.priority = info->priority;
    bool disabled = false;
    Json bare = conf;
    if (auto meta = conf.find("_meta"); meta != conf.end() && meta->is_object()) {
      if (Status s = apply_meta(*meta, &e, &disabled); !s.is_ok()) {
        return Status::error(fmt::format("plugin {}: {}", name, s.message()));
      }
      bare.erase("_meta");
    }
    if (disabled) {
      continue;
    }
    auto made = info->make(bare, plugin::BuildEnv{owner, shared});
    if (!made.is_ok()) {
      return Status::error(fmt::format("plugin {}: {}", name, made.status().message()));
    }
    e.plugin = std::move(made).value();
    out->push_back(std::move(e));
  }
  return Status::ok();
}

StatusOr<ChainPtr> finish(std::vector<plugin::Entry> entries) {
  if (entries.empty()) {
    return ChainPtr();
  }
  if (entries.size() > plugin::Chain::kMaxEntries) {
    return Status::error(
        fmt::format("more than {} plugins on one request", plugin::Chain::kMaxEntries));
  }
  return ChainPtr(std::make_shared<const plugin::Chain>(std::move(entries)));
}

}  // namespace

StatusOr<ChainPtr> build_chain(const Json& plugins, std::string_view owner, plugin::Shared& shared,
                               std::vector<std::string>* warnings) {
  if (!plugins.is_object() || plugins.empty()) {
    return ChainPtr();
  }
  std::vector<plugin::Entry> entries;
  if (Status s = add_entries(plugins, owner, shared, warnings, &entries); !s.is_ok()) {
    return s;
  }
  return finish(std::move(entries));
}

StatusOr<ChainPtr> build_global_chain(const std::vector<GlobalRuleConf>& rules,
                                      plugin::Shared& shared, std::vector<std::string>* warnings) {
  std::vector<plugin::Entry> entries;
  for (const GlobalRuleConf& r : rules) {
    std::string owner = "global_rule/" + r.id;
    if (r.plugins.is_object()) {
      Status s = add_entries(r.plugins, owner, shared, warnings, &entries);
      if (!s.is_ok()) {
        return Status::error(fmt::format("global_rule {}: {}", r.id, s.message()));
      }
    }
  }
  return finish(std::move(entries));
}

}  // namespace sluice::config
