#pragma once
// Decodes an upstream's `checks` (APISIX's health_checker schema) into health::Checks.

#include "common/status.h"
#include "config/resources.h"
#include "health/checks.h"

namespace sluice::config {

// Errors are fragments (`property "active" validation failed: ...`), defaults filled in.
common::StatusOr<health::Checks> decode_checks(const Json& v);

}  // namespace sluice::config
