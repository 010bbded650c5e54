#pragma once
// APISIX's `${{VAR}}` / `${{VAR:=default}}` environment references in config files.

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace sluice::config {

// Replaces every `${{VAR}}` and `${{VAR:=default}}` in `text` (spaces inside the braces are
// allowed: `${{ VAR := x }}`) with the environment value, else the default. VAR is
// [A-Za-z0-9_]+; a reference that does not have that shape is left as written. An unset VAR
// without a default is an error: `can't find environment variable VAR`.
common::StatusOr<std::string> substitute_env(const std::string& text);

// Applies substitute_env to every string key and string value of a parsed document, as
// APISIX does after loading its YAML files. A value that used a variable is re-typed the way
// APISIX does: a number-looking result becomes a number, "true"/"false" a boolean.
common::Status substitute_env_in_document(nlohmann::json* doc);

// Parses a YAML config file (`source` names it in errors) and substitutes its environment
// references: what config.yaml and apisix.yaml both go through.
common::StatusOr<nlohmann::json> load_config_document(const std::string& text, const char* source);

}  // namespace sluice::config
