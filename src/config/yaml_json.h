#pragma once
// YAML text -> JSON, with YAML's plain-scalar typing, so YAML files and JSON bodies decode alike.

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace sluice::config {

using Json = nlohmann::json;

// Parses the first YAML document of `text`. Plain scalars are typed (true/false -> bool,
// null/~/empty -> null, integers, floats); quoted, block and other scalars stay strings, so
// `"1980"` is a string and `1980` a number. Mapping keys are strings; duplicate keys are an
// error. Errors read `<source_name>: line L, column C: <message>`. Never throws.
common::StatusOr<Json> yaml_to_json(const std::string& text, const std::string& source_name);

}  // namespace sluice::config
