#pragma once
// The plugins enabled in this process, and the check APISIX makes on every `plugins` object
// (unknown names, per-plugin schema, the injected `_meta`). A test can pass its own table.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/resources.h"
#include "plugin/info.h"

namespace sluice::config {

using plugin::PluginInfo;
using plugin::PluginUse;

// The enabled plugins (config.yaml `plugins`), highest priority first. Every built-in one
// until set_enabled_plugins is called.
// Thread: control (and single-threaded tools: tests, fuzz targets)
std::span<const PluginInfo> all_plugins();

// Enables the built-in plugins named in `names` (config.yaml `plugins`), or all of them when
// `names` is null. Returns the names that are not built in, for the caller's warning.
std::vector<std::string> set_enabled_plugins(const std::vector<std::string>* names);

// nullptr when `name` is not in the table.
const PluginInfo* find_plugin(std::string_view name);
const PluginInfo* find_plugin(std::string_view name, std::span<const PluginInfo> registry);

// Checks a `plugins` object as APISIX's plugin.check_schema does, first error wins:
//   not an object:      `invalid configuration: property "plugins" validation failed: wrong
//                        type: expected object, got table`
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
