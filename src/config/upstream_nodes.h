#pragma once
// An upstream's `nodes`, in either of APISIX's two forms: {"host:port": weight} or
// [{host, port, weight, priority, metadata}].

#include <string>
#include <vector>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Decodes `nodes`; a node without a port gets port 0 until fill_default_ports runs. Errors are
// jsonschema-style fragments (`failed to validate item 1: property "weight" is required`).
common::StatusOr<std::vector<UpstreamNodeConf>> decode_upstream_nodes(const Json& v);

// Gives port-less nodes the scheme's default port: 443 for https and grpcs, else 80.
void fill_default_ports(std::vector<UpstreamNodeConf>* nodes, const std::string& scheme);

}  // namespace sluice::config
