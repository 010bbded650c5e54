#pragma once
// Value syntaxes of config.yaml that are nginx's: durations ("60s", "1m30s", "500ms") and
// sizes ("0", "10m", "1g").

#include <cstdint>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// An nginx time: a number of seconds, or units ms s m h d w M y, possibly combined ("1m30s");
// a bare string number is seconds. Returns seconds. Errors are fragments for the key's path.
common::StatusOr<double> parse_duration(const Json& v);

// An nginx size: bytes, or a number with k/K, m/M or g/G. Returns bytes.
common::StatusOr<uint64_t> parse_size(const Json& v);

// An IPv4 or IPv6 literal, IPv6 optionally in brackets; returns it without brackets.
common::StatusOr<std::string> parse_ip(const Json& v);

}  // namespace sluice::config
