// The consumers of a ConfigSet as the request path sees them (plugin::Consumers): each
// consumer with the chain of its non-auth plugins over its group's, each credential, and for
// every auth plugin the index its hook finds credentials in (PluginInfo::index).

#include <fmt/format.h>

#include <memory>
#include <unordered_map>

#include "config/plugin_chains.h"
#include "config/plugin_registry.h"
#include "config/secret_refs.h"
#include "config/snapshot_builder.h"

namespace sluice::config {

namespace {

// An auth conf as its plugin's index reads it: the stored conf itself, or a copy without
// `_meta` and with its references resolved.
struct PendingConf {
  const plugin::Credential* credential;
  const Json* conf;
  std::unique_ptr<Json> owned;  // when `conf` had to change
};

// Moves the auth confs of `plugins` into `auth` (by plugin name) and returns the others, null
// when there are none (the common case: a consumer with only a key builds no JSON).
// `_meta.disable`d auth confs are left out, as APISIX's plugin filter leaves them.
std::unique_ptr<Json> split_auth(const Json& plugins, const plugin::Credential& cred,
                                 std::string_view owner_kind, std::string_view owner,
                                 std::unordered_map<std::string, std::vector<PendingConf>>* auth,
                                 std::vector<std::string>* warnings) {
  std::unique_ptr<Json> rest;
  if (!plugins.is_object()) {
    return rest;
  }
  for (const auto& [name, conf] : plugins.items()) {
    const PluginInfo* info = find_plugin(name);
    if (info == nullptr || !info->auth) {
      if (!rest) {
        rest = std::make_unique<Json>(Json::object());
      }
      (*rest)[name] = conf;
      continue;
    }
    PendingConf p{&cred, &conf, nullptr};
    if (auto meta = conf.find("_meta"); meta != conf.end()) {
      if (meta->is_object() && meta->value("disable", false)) {
        continue;
      }
      p.owned = std::make_unique<Json>(conf);
      p.owned->erase("_meta");
    }
    if (has_secret_refs(*(p.owned ? p.owned.get() : &conf))) {
      if (!p.owned) {
        p.owned = std::make_unique<Json>(conf);
      }
      std::string why;
      if (!resolve_secret_refs(p.owned.get(), &why)) {
        warnings->push_back(
            fmt::format("{}: plugin {}: {}; it authenticates no request", owner, name, why));
        continue;
      }
    }
    if (p.owned) {
      p.conf = p.owned.get();
    }
    (*auth)[name].push_back(std::move(p));
  }
  return rest;
}

// A group's plugins without auth confs (a group cannot authenticate anyone).
Json without_auth(const Json& plugins) {
  Json rest = Json::object();
  if (plugins.is_object()) {
    for (const auto& [name, conf] : plugins.items()) {
      const PluginInfo* info = find_plugin(name);
      if (info == nullptr || !info->auth) {
        rest[name] = conf;
      }
    }
  }
  return rest;
}

}  // namespace

common::StatusOr<std::shared_ptr<const plugin::Consumers>> build_consumers(
    const ConfigSet& set, plugin::Shared& shared, std::vector<std::string>* warnings) {
  auto out = std::make_shared<plugin::Consumers>();
  out->reserve(set.consumers.size(), set.credentials.size());
  std::unordered_map<std::string_view, const ConsumerGroupConf*> groups;
  for (const ConsumerGroupConf& g : set.consumer_groups) {
    groups[g.id] = &g;
  }
  std::unordered_map<std::string, std::vector<PendingConf>> auth;
  for (const ConsumerConf& c : set.consumers) {
    auto made = std::make_unique<plugin::Consumer>();
    made->name = c.username;
    made->group_id = c.group_id;
    if (auto it = c.labels.find("custom_id"); it != c.labels.end()) {
      made->custom_id = it->second;
    }
    plugin::Consumer& cons = out->add(std::move(made));
    std::unique_ptr<Json> own =
        split_auth(c.plugins, cons.self, "consumer/", c.username, &auth, warnings);
    const Json* group_plugins = nullptr;
    Json group_rest;
    if (!c.group_id.empty()) {
      auto g = groups.find(c.group_id);
      if (g == groups.end()) {
        cons.group_missing = true;
        warnings->push_back(
            fmt::format("consumer/{}: consumer group {} does not exist; requests "
                        "that authenticate as it are answered 503",
                        c.username, c.group_id));
      } else {
        group_rest = without_auth(g->second->plugins);
        group_plugins = group_rest.empty() ? nullptr : &group_rest;
      }
    }
    if (own || group_plugins != nullptr) {
      Json merged = merge_plugins({group_plugins, own.get()});
      auto chain = build_chain(merged, "consumer/" + c.username, shared, warnings);
      if (!chain.is_ok()) {
        return common::Status::error(
            fmt::format("consumer {}: {}", c.username, chain.status().message()));
      }
      cons.chain = std::move(chain).value();
    }
  }
  for (const CredentialConf& cr : set.credentials) {
    const plugin::Consumer* cons = out->find(cr.consumer);
    std::string owner = fmt::format("consumer/{}/credentials/{}", cr.consumer, cr.id);
    if (cons == nullptr) {
      warnings->push_back(fmt::format("{}: its consumer does not exist; it is ignored", owner));
      continue;
    }
    const plugin::Credential& cred = out->add_credential(*cons, cr.id);
    if (auto rest = split_auth(cr.plugins, cred, "", owner, &auth, warnings)) {
      for (const auto& [name, conf] : rest->items()) {
        warnings->push_back(
            fmt::format("{}: plugin {} is not an auth plugin; it is ignored", owner, name));
      }
    }
  }
  for (const PluginInfo& info : all_plugins()) {
    auto it = auth.find(std::string(info.name));
    if (!info.auth || info.index == nullptr || it == auth.end()) {
      continue;
    }
    std::vector<plugin::AuthConf> confs;
    confs.reserve(it->second.size());
    for (const PendingConf& p : it->second) {
      confs.push_back({p.credential, p.conf});
    }
    auto index = info.index(confs, warnings);
    if (!index.is_ok()) {
      return common::Status::error(
          fmt::format("plugin {} on consumers: {}", info.name, index.status().message()));
    }
    out->set_index(info.name, std::move(index).value());
  }
  return std::shared_ptr<const plugin::Consumers>(std::move(out));
}

}  // namespace sluice::config
