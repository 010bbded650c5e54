#pragma once
// The value syntaxes of config.yaml's own keys (booleans, on/off, durations in seconds, ports,
// worker counts, log levels, roles, providers), as parse_gateway_config reads them. Errors are
// fragments for the key's path.

#include <cstdint>
#include <string>

#include "common/log.h"
#include "common/status.h"
#include "config/gateway_config.h"
#include "config/resources.h"

namespace sluice::config {

common::StatusOr<bool> yaml_bool(const Json& v);
// nginx's on/off, or a YAML boolean.
common::StatusOr<bool> yaml_on_off(const Json& v);
// sluice.io_uring: auto (or on, true) batches socket calls through io_uring where the kernel
// allows it; off (or false) keeps plain system calls.
common::StatusOr<bool> io_uring_mode(const Json& v);
// A number of seconds, or an nginx duration.
common::StatusOr<double> yaml_seconds(const Json& v);
// A file path as written; parse_gateway_config resolves relative ones.
common::StatusOr<std::string> file_path(const Json& v);
// "auto" (0) or 1-4096.
common::StatusOr<int> worker_count(const Json& v);
// A connection cap: 0 (no cap of its own) up to 10 million.
common::StatusOr<uint32_t> connection_cap(const Json& v);
common::StatusOr<common::LogLevel> yaml_log_level(const Json& v);
// traditional, data_plane or control_plane.
common::StatusOr<std::string> role_name(const Json& v);
// yaml, etcd or embedded.
common::StatusOr<ConfigProvider> provider_kind(const Json& v);
common::StatusOr<uint16_t> yaml_port(const Json& v);
// nginx_config.http.access_log: a file path; "off" (nginx's word) or false turns the log off,
// which reads as an empty path.
common::StatusOr<std::string> access_log_path(const Json& v);
// nginx_config.http.access_log_format_escape: default, json or none (nginx's escape=).
common::StatusOr<accesslog::Escape> access_log_escape(const Json& v);

}  // namespace sluice::config
