#include "config/plugin_chains.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

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
    e.prefer_route = info->prefer_route;
    e.auth = info->auth;
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

namespace {

// Chains built for earlier snapshots, by owner and conf: an unchanged route reuses its chain
// (its plugins' parsed confs, resolved Redis addresses) instead of building it again, so a
// change to one route of 10,000 builds one chain. Entries unused by a successful build go.
// Thread: control
struct ChainCache {
  struct Item {
    Json conf;  // what the chain was built from; compared, not hashed or printed
    ChainPtr chain;
    std::vector<std::string> warnings;
    uint64_t used = 0;
    // The plugin_metadata objects its plugins read (null: none existed), by plugin name.
    std::vector<std::pair<std::string, Json>> metadata;
  };
  std::unordered_map<std::string, Item> items;  // by owner
  uint64_t generation = 0;
};

ChainCache& cache_of(plugin::Shared& shared) {
  return *shared.get<ChainCache>(kChainCacheKey, [] { return std::make_shared<ChainCache>(); });
}

// Whether the plugin_metadata objects `item`'s plugins read are still what they were.
bool same_metadata(const ChainCache::Item& item, plugin::Shared& shared) {
  for (const auto& [name, was] : item.metadata) {
    const Json* now = shared.metadata_of(name);
    if (now == nullptr ? !was.is_null() : *now != was) {
      return false;
    }
  }
  return true;
}

}  // namespace

void begin_chain_build(plugin::Shared& shared) { ++cache_of(shared).generation; }

void end_chain_build(plugin::Shared& shared) {
  ChainCache& c = cache_of(shared);
  std::erase_if(c.items, [&](const auto& kv) { return kv.second.used != c.generation; });
}

StatusOr<ChainPtr> build_chain(const Json& plugins, std::string_view owner, plugin::Shared& shared,
                               std::vector<std::string>* warnings) {
  if (!plugins.is_object() || plugins.empty()) {
    return ChainPtr();
  }
  ChainCache& cache = cache_of(shared);
  std::string key(owner);
  if (auto it = cache.items.find(key);
      it != cache.items.end() && it->second.conf == plugins && same_metadata(it->second, shared)) {
    it->second.used = cache.generation;
    warnings->insert(warnings->end(), it->second.warnings.begin(), it->second.warnings.end());
    return it->second.chain;
  }
  std::vector<plugin::Entry> entries;
  std::vector<std::string> own_warnings;
  const uint64_t uses = shared.upstreams != nullptr ? shared.upstreams->uses : 0;
  shared.metadata_reads.clear();
  if (Status s = add_entries(plugins, owner, shared, &own_warnings, &entries); !s.is_ok()) {
    return s;
  }
  std::vector<std::pair<std::string, Json>> metadata;
  for (const std::string& name : shared.metadata_reads) {
    const Json* m = shared.metadata_of(name);
    metadata.emplace_back(name, m != nullptr ? *m : Json());
  }
  auto chain = finish(std::move(entries));
  // A chain that named this snapshot's upstreams (traffic-split) is not kept for the next.
  if (shared.upstreams != nullptr && shared.upstreams->uses != uses) {
    cache.items.erase(key);
    warnings->insert(warnings->end(), own_warnings.begin(), own_warnings.end());
    return chain;
  }
  if (chain.is_ok()) {
    warnings->insert(warnings->end(), own_warnings.begin(), own_warnings.end());
    cache.items[std::move(key)] = {plugins, *chain, std::move(own_warnings), cache.generation,
                                   std::move(metadata)};
  }
  return chain;
}

namespace {

// Drops the entries of `added` (the tail of `entries` from index `first`) whose plugin is
// prefer_route and already came from an earlier global rule: it runs once per request.
void drop_repeated_prefer_route(std::vector<plugin::Entry>& entries, size_t first,
                                std::string_view owner, std::vector<std::string>* warnings) {
  for (size_t i = first; i < entries.size();) {
    auto earlier = std::find_if(entries.begin(), entries.begin() + first,
                                [&](const plugin::Entry& e) { return e.name == entries[i].name; });
    if (entries[i].prefer_route && earlier != entries.begin() + first) {
      warnings->push_back(
          fmt::format("{}: plugin {} is in an earlier global rule too; only the first runs", owner,
                      entries[i].name));
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace

StatusOr<ChainPtr> build_global_chain(const std::vector<GlobalRuleConf>& rules,
                                      plugin::Shared& shared, std::vector<std::string>* warnings) {
  std::vector<plugin::Entry> entries;
  for (const GlobalRuleConf& r : rules) {
    std::string owner = "global_rule/" + r.id;
    if (r.plugins.is_object()) {
      const size_t first = entries.size();
      Status s = add_entries(r.plugins, owner, shared, warnings, &entries);
      if (!s.is_ok()) {
        return Status::error(fmt::format("global_rule {}: {}", r.id, s.message()));
      }
      drop_repeated_prefer_route(entries, first, owner, warnings);
    }
  }
  return finish(std::move(entries));
}

}  // namespace sluice::config
