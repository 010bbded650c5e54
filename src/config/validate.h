#pragma once
// One entry point for the Admin API: check a resource body of any kind with its decoder.

#include <string_view>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Checks `obj` as a resource of `kind`, the Admin API's name for it ("routes", "services",
// "upstreams", "consumers", "ssls", "global_rules", "plugin_configs", "plugin_metadata",
// "stream_routes", "protos", "consumer_groups", "secrets"). The error is the decoder's (see
// resources.h); an unknown kind gives `Unsupported resource type: <kind>`.
//
// `id` is the resource's id from the URL and matters to two kinds only: for plugin_metadata it
// is the plugin name, for secrets `<manager>/<id>` (the manager picks the schema). When it is
// empty, these two kinds take it from the object's `id`, else fail with APISIX's
// `missing plugin name` / `missing secret type`. Other kinds ignore it: the caller compares
// URL and body ids.
common::Status validate_resource(std::string_view kind, std::string_view id, const Json& obj);
common::Status validate_resource(std::string_view kind, const Json& obj);

}  // namespace sluice::config
