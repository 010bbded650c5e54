#pragma once
// apisix.yaml, the standalone (file-driven) configuration.

#include <string>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Parses apisix.yaml: the text must end with a `#END` line (a file caught half-written is
// refused), `${{VAR}}` references are substituted, and `routes`, `services` and `upstreams`
// are decoded; the other APISIX kinds are accepted as arrays and named in
// ConfigSet::warnings when non-empty. Every item needs a unique `id` within its kind. Errors
// name the item: `apisix.yaml: routes[2] (id "5"): invalid configuration: ...`.
common::StatusOr<ConfigSet> parse_standalone(const std::string& text);

}  // namespace sluice::config
