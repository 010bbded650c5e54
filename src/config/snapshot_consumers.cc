// The consumers of a ConfigSet as the request path sees them (plugin::Consumers): each
// consumer with the chain of its non-auth plugins over its group's, each credential, and for
// every auth plugin the index its hook finds credentials in (PluginInfo::index).

#include <fmt/format.h>

#include <unordered_map>

#include "config/plugin_chains.h"
#include "config/plugin_registry.h"
#include "config/secret_refs.h"
#include "config/snapshot_builder.h"

namespace sluice::config {

namespace {

// An auth conf with its references resolved: AuthConf::conf points at `conf`.
struct PendingConf {
  const plugin::Credential* credential;
  Json conf;
};

// Splits `plugins` into auth confs (into `auth`, by plugin name) and the rest (returned).
// `_meta.disable`d auth confs are left out, as APISIX's plugin filter leaves them.
Json split_auth(const Json& plugins, const plugin::Credential& cred, std::string_view owner,
                std::unordered_map<std::string, std::vector<PendingConf>>* auth,
                std::vector<std::string>* warnings) {
  Json rest = Json::object();
  if (!plugins.is_object()) {
    return rest;
  }
  for (const auto& [name, conf] : plugins.items()) {
    const PluginInfo* info = find_plugin(name);
    if (info == nullptr || !info->auth) {
      rest[name] = conf;
      continue;
    }
    if (auto meta = conf.find("_meta");
        meta != conf.end() && meta->is_object() && meta->value("disable", false)) {
      continue;
    }
    PendingConf p{&cred, conf};
    p.conf.erase("_meta");
    std::string why;
    if (has_secret_refs(p.conf) && !resolve_secret_refs(&p.conf, &why)) {
      warnings->push_back(
          fmt::format("{}: plugin {}: {}; it authenticates no request", owner, name, why));
      continue;
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
    std::string owner = "consumer/" + c.username;
    Json own = split_auth(c.plugins, cons.self, owner, &auth, warnings);
    const Json* group_plugins = nullptr;
    Json group_rest;
    if (!c.group_id.empty()) {
      auto g = groups.find(c.group_id);
      if (g == groups.end()) {
        cons.group_missing = true;
        warnings->push_back(
            fmt::format("{}: consumer group {} does not exist; requests that "
                        "authenticate as it are answered 503",
                        owner, c.group_id));
      } else {
        group_rest = without_auth(g->second->plugins);
        group_plugins = &group_rest;
      }
    }
    Json merged = merge_plugins({group_plugins, &own});
    if (!merged.empty()) {
      auto chain = build_chain(merged, owner, shared, warnings);
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
    Json rest = split_auth(cr.plugins, cred, owner, &auth, warnings);
    for (const auto& [name, conf] : rest.items()) {
      warnings->push_back(
          fmt::format("{}: plugin {} is not an auth plugin; it is ignored", owner, name));
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
      confs.push_back({p.credential, &p.conf});
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
