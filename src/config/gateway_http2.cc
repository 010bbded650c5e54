// sluice.http2 in config.yaml: the SETTINGS an HTTP/2 connection announces and the limits it
// enforces, each checked against the range RFC 9113 (or sense) allows. Unknown keys are
// errors: a misspelt limit must not silently leave the default in force.

#include <fmt/format.h>

#include <limits>

#include "config/gateway_config.h"

namespace sluice::config {

using common::Status;

namespace {

struct Limit {
  const char* key;
  uint32_t Http2Config::*field;
  int64_t lo, hi;
};

constexpr int64_t kMaxWindow = std::numeric_limits<int32_t>::max();  // RFC 9113 6.9.1

constexpr Limit kLimits[] = {
    {"max_concurrent_streams", &Http2Config::max_concurrent_streams, 1, 100000},
    {"initial_window_size", &Http2Config::initial_window_size, 1024, kMaxWindow},
    {"connection_window_size", &Http2Config::connection_window_size, 65535, kMaxWindow},
    {"max_frame_size", &Http2Config::max_frame_size, 16384, 16777215},  // RFC 9113 6.5.2
    {"max_header_list_size", &Http2Config::max_header_list_size, 1024, 1 << 20},
    {"max_requests", &Http2Config::max_requests, 1, kMaxWindow},
    {"max_continuations", &Http2Config::max_continuations, 0, 1024},
    {"reset_burst", &Http2Config::reset_burst, 1, 1000000},
    {"reset_rate", &Http2Config::reset_rate, 1, 1000000},
    {"control_burst", &Http2Config::control_burst, 1, 1000000},
    {"control_rate", &Http2Config::control_rate, 1, 1000000},
};

}  // namespace

Status parse_http2_config(const nlohmann::json& v, const std::string& path, Http2Config* out) {
  if (!v.is_object()) {
    return Status::error(fmt::format("config.yaml: {}: expected a mapping", path));
  }
  for (const auto& [key, value] : v.items()) {
    const Limit* limit = nullptr;
    for (const Limit& l : kLimits) {
      limit = key == l.key ? &l : limit;
    }
    if (limit == nullptr) {
      return Status::error(fmt::format("config.yaml: {}.{}: unknown key", path, key));
    }
    if (!value.is_number_integer() || value.get<int64_t>() < limit->lo ||
        value.get<int64_t>() > limit->hi) {
      return Status::error(fmt::format("config.yaml: {}.{}: expected an integer {}-{}, got {}",
                                       path, key, limit->lo, limit->hi, value.dump()));
    }
    out->*(limit->field) = static_cast<uint32_t>(value.get<int64_t>());
  }
  return Status::ok();
}

}  // namespace sluice::config
