#pragma once
// The JSON edits behind the Admin API's PATCH: a recursive merge (objects merge, arrays and
// scalars replace, null deletes) and a replacement at a sub path (`upstream/nodes`).

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::admin {

// Merges `patch` into `target` as APISIX's core.table.merge does for PATCH bodies.
void merge_patch(config::Json& target, const config::Json& patch);

// Sets the value at `sub_path` ("a/b/c") inside `target`; a null `value` deletes the key.
// Missing steps are created as objects; a step through a non-object is an error.
common::Status patch_at(config::Json& target, std::string_view sub_path, config::Json value);

// False when `text` nests objects/arrays deeper than `max_depth` (checked before parsing, so
// a hostile body cannot make any recursive JSON code run deep).
bool nesting_within(std::string_view text, int max_depth);

// `text` with the raw control characters (0x01-0x1f) inside JSON strings written as \u00XX
// escapes, so that a body APISIX's decoder (lua-cjson, which takes them as they are) accepts
// parses here too; nullopt when there are none. Outside strings nothing changes, and a NUL
// stays a NUL, so the parser stays strict everywhere else.
std::optional<std::string> escape_raw_controls(std::string_view text);

}  // namespace sluice::admin
