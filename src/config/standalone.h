#pragma once
// apisix.yaml, the standalone (file-driven) configuration.

#include <string>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Parses apisix.yaml: the text must end with a `#END` line (a file caught half-written is
// refused), `${{VAR}}` references are substituted, and every APISIX kind is decoded. Kinds
// that are stored but not served yet (all but routes, services and upstreams) are named in
// ConfigSet::warnings when non-empty. Every item needs a unique `id` within its kind (a
// consumer: `username`; a secret: `<manager>/<id>`; plugin_metadata: the plugin name). Errors
// name the item: `apisix.yaml: routes[2] (id "5"): invalid configuration: ...`.
common::StatusOr<ConfigSet> parse_standalone(const std::string& text);

}  // namespace sluice::config
