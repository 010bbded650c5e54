#pragma once
// The table of plugins Sluice knows, and the check APISIX makes on every `plugins` object
// (unknown names, per-plugin schema, the injected `_meta`). The table is empty until the first
// plugin lands; a test can pass its own table.

#include <span>
#include <string_view>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Where a plugin conf sits; it picks the schema the conf is checked against (APISIX's
// schema_type) and, for kStream, limits the names to stream plugins.
enum class PluginUse {
  kHttp,      // routes, services, global_rules, plugin_configs, consumer_groups
  kConsumer,  // consumers (auth plugins have a consumer-side schema)
  kStream,    // stream_routes
  kMetadata,  // plugin_metadata: the conf is the plugin's metadata object
};

// One known plugin: its name, default priority and config checker.
// Thread: any (immutable)
struct PluginInfo {
  std::string_view name;
  int priority = 0;     // higher runs first within a phase
  bool stream = false;  // also usable on stream_routes
  // Checks one conf (without `_meta`); the error text is the part after `err: `.
  // nullptr accepts any object.
  common::Status (*check)(const Json& conf, PluginUse use) = nullptr;
};

// Every built-in plugin, in priority order (highest first). Empty today.
std::span<const PluginInfo> all_plugins();

// nullptr when `name` is not in the table.
const PluginInfo* find_plugin(std::string_view name);
const PluginInfo* find_plugin(std::string_view name, std::span<const PluginInfo> registry);

// Checks a `plugins` object as APISIX's plugin.check_schema does, first error wins:
//   not an object:      `invalid configuration: property "plugins" validation failed: wrong
//                        type: expected object, got array`
//   a conf not object:  `invalid plugin conf 1 for plugin [name]`
//   unknown name:       `unknown plugin [name]`
//   bad conf or _meta:  `failed to check the configuration of plugin <name> err: <msg>`
common::Status check_plugins(const Json& plugins, PluginUse use = PluginUse::kHttp);
common::Status check_plugins(const Json& plugins, PluginUse use,
                             std::span<const PluginInfo> registry);

// Checks the metadata object of plugin `name`: `unknown plugin [name]`, or
// `invalid configuration: <msg>` from the plugin's metadata check.
common::Status check_plugin_metadata(std::string_view name, const Json& conf,
                                     std::span<const PluginInfo> registry);

}  // namespace sluice::config
