#pragma once
// Turns `plugins` objects into the chains a snapshot serves: merges a route's plugins with
// its service's and plugin_config's, drops `_meta.disable`d and no-longer-enabled plugins,
// builds each configured plugin once, and sorts them by priority.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/resources.h"
#include "plugin/chain.h"
#include "plugin/info.h"

namespace sluice::config {

// Later sources win per plugin name (APISIX: route > plugin_config > service). Null entries
// are skipped.
Json merge_plugins(std::initializer_list<const Json*> lowest_first);

// A chain for `plugins` (an object, or null: no chain); `owner` scopes the plugins' state
// ("route/1", "global_rule/2"). Plugins that are not enabled are skipped with a warning.
// Errors name the plugin: `plugin limit-count: <why>`. The same owner and conf within one
// begin/end bracket, or from the previous successful one, give the same chain object.
common::StatusOr<std::shared_ptr<const plugin::Chain>> build_chain(
    const Json& plugins, std::string_view owner, plugin::Shared& shared,
    std::vector<std::string>* warnings);

// Brackets one snapshot build: chains the build did not ask for are forgotten at its end
// (call end_chain_build only when the build succeeded). Forget the whole cache (Shared::forget)
// when the enabled plugins or plugin_attr change.
void begin_chain_build(plugin::Shared& shared);
void end_chain_build(plugin::Shared& shared);
inline constexpr const char* kChainCacheKey = "config/chain-cache";

// The one chain of every global rule's plugins, or null when there are none.
common::StatusOr<std::shared_ptr<const plugin::Chain>> build_global_chain(
    const std::vector<GlobalRuleConf>& rules, plugin::Shared& shared,
    std::vector<std::string>* warnings);

}  // namespace sluice::config
