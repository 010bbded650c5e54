#pragma once
// apisix.yaml, the standalone (file-driven) configuration.

#include <string>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Parses apisix.yaml: the text must end with a `#END` line (a file caught half-written is
// refused), `${{VAR}}` references are substituted, and every APISIX kind is decoded. Kinds
// kept but not served (config_kinds() in snapshot_builder.h says which) are named in
// ConfigSet::warnings when non-empty, without a file prefix (the caller adds its path). Ids are
// unique within a kind; an item without one is named `<kind>#<n>` (n from 1), as APISIX does,
// except where the id means something: a consumer needs its `username`, a plugin_metadata item
// its plugin name in `id`, a secret `<manager>/<id>`. A consumers item whose `id` is
// `<username>/credentials/<id>` is a credential of that consumer (APISIX 3.7+), which must be in
// the file too; its plugin fields are read as written (APISIX decrypts them from etcd only).
// Errors name the item:
// `apisix.yaml: routes[2] (id "5"): invalid configuration: ...`.
common::StatusOr<ConfigSet> parse_standalone(const std::string& text);

}  // namespace sluice::config
