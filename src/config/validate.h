#pragma once
// One entry point for the Admin API: check a resource body of any kind with its decoder.

#include <array>
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

// validate_resource plus what building a snapshot would refuse of an object that decodes (a
// route's `vars` that do not compile, `remote_addrs` that do not parse): every object that
// passes serves. For each way into a store: the Admin API, `config load`, and values read
// from etcd (written there by anyone).
common::Status check_resource(std::string_view kind, std::string_view id, const Json& obj);

// Every kind of resource a configuration holds, in the order a dump lists them.
inline constexpr std::array<std::string_view, 12> kResourceKinds = {
    "routes",          "services",      "upstreams",    "consumers",
    "consumer_groups", "ssls",          "global_rules", "plugin_configs",
    "plugin_metadata", "stream_routes", "protos",       "secrets"};
bool is_resource_kind(std::string_view kind);

}  // namespace sluice::config
