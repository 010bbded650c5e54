#pragma once
// What Sluice knows about a plugin before any conf exists: its name, default priority, the
// check APISIX's schema makes on a conf, the factory that turns a checked conf into a
// configured Plugin, and its JSON schema for `GET /apisix/admin/plugins/{name}`.

#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "plugin/consumer.h"
#include "plugin/plugin.h"
#include "plugin/upstreams.h"

namespace sluice::plugin {

using Json = nlohmann::json;

// Where a plugin conf sits; it picks the schema the conf is checked against (APISIX's
// schema_type) and, for kStream, limits the names to stream plugins.
enum class PluginUse {
  kHttp,      // routes, services, global_rules, plugin_configs, consumer_groups
  kConsumer,  // consumers (auth plugins have a consumer-side schema)
  kStream,    // stream_routes
  kMetadata,  // plugin_metadata: the conf is the plugin's metadata object
};

// Objects that outlive snapshots (limit-count's counters, say), made on first use, plus the
// `plugin_attr` section of config.yaml.
// Thread: control (the objects it hands out say their own thread rules)
class Shared {
 public:
  Json attr = Json::object();  // config.yaml plugin_attr
  // The HTTPS listener's port (apisix.ssl.listen's first), 0 when apisix.ssl is off: where
  // redirect's http_to_https sends plaintext clients unless plugin_attr names a port.
  uint16_t ssl_port = 0;
  // The snapshot builder's upstreams while it builds plugins (make); null otherwise.
  UpstreamCatalog* upstreams = nullptr;
  // The snapshot's plugin_metadata objects by plugin name while the builder builds plugins
  // (make); null otherwise. A plugin reads its own through metadata_of().
  const std::unordered_map<std::string, Json>* metadata = nullptr;
  // The plugin_metadata object of `plugin` in the snapshot being built, or null (none, or
  // not building). The name is added to `metadata_reads`: a chain built from a plugin that
  // read it is built again when the object changes (config/plugin_chains.cc).
  const Json* metadata_of(std::string_view plugin);
  std::vector<std::string> metadata_reads;

  template <class T, class Make>
  std::shared_ptr<T> get(const std::string& key, Make&& make) {
    auto it = objects_.find(key);
    if (it == objects_.end()) {
      it = objects_.emplace(key, std::shared_ptr<void>(make())).first;
    }
    return std::static_pointer_cast<T>(it->second);
  }
  // The object named `key`, or null when none was made.
  template <class T>
  std::shared_ptr<T> find(const std::string& key) const {
    auto it = objects_.find(key);
    return it == objects_.end() ? nullptr : std::static_pointer_cast<T>(it->second);
  }
  // Drops the object named `key`; the next get() makes a new one.
  void forget(const std::string& key) { objects_.erase(key); }
  // attr[name], or an empty object.
  const Json& attr_of(std::string_view name) const;

 private:
  std::unordered_map<std::string, std::shared_ptr<void>> objects_;
};

// What a factory knows about where its conf sits.
// Thread: control
struct BuildEnv {
  std::string_view owner;  // "route/1", "global_rule/2": the counters' and metrics' scope
  Shared& shared;
};

// What the gateway tells a plugin's process_init hook.
struct ProcessEnv {
  int workers = 1;  // worker threads that will serve, each getting a worker_init call
};

// One known plugin.
// Thread: any (immutable)
struct PluginInfo {
  std::string_view name;
  int priority = 0;     // higher runs first within a phase
  bool stream = false;  // also usable on stream_routes
  // Checks one conf (without `_meta`); the error text is the part after `err: `.
  // nullptr accepts any object.
  common::Status (*check)(const Json& conf, PluginUse use) = nullptr;
  // Builds the configured plugin from a conf `check` accepted (without `_meta`).
  common::StatusOr<std::shared_ptr<const Plugin>> (*make)(const Json& conf,
                                                          const BuildEnv& env) = nullptr;
  std::string_view schema{};  // JSON text

  // Lifecycle hooks, each optional (nullptr), all called on the control thread. They are
  // called for every built-in plugin, enabled or not, so that enabling one later (plugin
  // reload) finds its objects made.
  // At start, before any worker exists: make the plugin's process-wide objects in `shared`.
  void (*process_init)(Shared& shared, const ProcessEnv& env) = nullptr;
  // For each worker, before its loop runs: leave what the plugin's hooks will need there in
  // `local` (WorkerLocal::set_slot).
  void (*worker_init)(Shared& shared, WorkerLocal& local) = nullptr;
  // At shutdown, after every worker has stopped.
  void (*destroy)(Shared& shared) = nullptr;
  // The plugin's control endpoint: the body of the answer to a GET on it, made on the control
  // thread (prometheus: its families of the metrics page). nullptr: the plugin has none.
  std::string (*control)(const Shared& shared) = nullptr;
  // APISIX's run_policy "prefer_route": a global rule's instance does not run for a request
  // whose route (merged with its service and plugin_config) has the plugin too. Sluice's own
  // choice beyond APISIX: of several global rules carrying it, only the first's instance is
  // kept (with a warning), so the plugin runs once per request; APISIX runs each rule's.
  bool prefer_route = false;

  // An auth plugin (APISIX's type "auth"): it runs in the rewrite phase, finds the request's
  // credential in its index and calls attach_consumer (consumer.h). Its conf on a consumer or
  // credential is checked with PluginUse::kConsumer and never joins a chain.
  bool auth = false;
  // Builds the plugin's index over every consumer-side conf of it, with the snapshot. Errors
  // refuse the whole configuration; `warnings` get what is only logged (a key two consumers
  // share). Only auth plugins have one.
  common::StatusOr<std::shared_ptr<const ConsumerIndex>> (*index)(
      std::span<const AuthConf> confs, std::vector<std::string>* warnings) = nullptr;
};

}  // namespace sluice::plugin
