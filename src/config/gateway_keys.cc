#include "config/gateway_keys.h"

#include "config/field_decoder.h"
#include "config/gateway_values.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

StatusOr<std::string> access_log_path(const Json& v) {
  if (v.is_boolean() && !v.get<bool>()) {
    return std::string();
  }
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return Status::error("expected a file path, or off, got " + json_text(v));
  }
  const std::string& s = v.get_ref<const std::string&>();
  return s == "off" ? std::string() : s;
}

StatusOr<accesslog::Escape> access_log_escape(const Json& v) {
  accesslog::Escape e = accesslog::Escape::kDefault;
  if (!v.is_string() || !accesslog::parse_escape(v.get_ref<const std::string&>(), &e)) {
    return Status::error("expected default, json or none, got " + json_text(v));
  }
  return e;
}

StatusOr<bool> yaml_bool(const Json& v) {
  if (!v.is_boolean()) {
    return Status::error("expected true or false, got " + json_type_name(v));
  }
  return v.get<bool>();
}

StatusOr<bool> yaml_on_off(const Json& v) {
  if (v.is_boolean()) {
    return v.get<bool>();
  }
  if (v.is_string() &&
      (v.get_ref<const std::string&>() == "on" || v.get_ref<const std::string&>() == "off")) {
    return v.get_ref<const std::string&>() == "on";
  }
  return Status::error("expected on, off, true or false, got " + json_text(v));
}

StatusOr<bool> io_uring_mode(const Json& v) {
  if (v.is_boolean()) {
    return v.get<bool>();
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "auto" || s == "on" || s == "off") {
      return s != "off";
    }
  }
  return Status::error("expected auto or off, got " + json_text(v));
}

StatusOr<double> yaml_seconds(const Json& v) {
  if (v.is_number() && v.get<double>() >= 0) {
    return v.get<double>();
  }
  return parse_duration(v);
}

StatusOr<std::string> file_path(const Json& v) { return as_string(v, 1, 4096); }

StatusOr<int> worker_count(const Json& v) {
  if (v.is_string() && v.get_ref<const std::string&>() == "auto") {
    return 0;
  }
  auto i = as_integer(v, 1, 4096);
  if (!i.is_ok()) {
    return Status::error("expected \"auto\" or an integer 1-4096, got " + json_text(v));
  }
  return static_cast<int>(*i);
}

StatusOr<uint32_t> connection_cap(const Json& v) {
  auto i = as_integer(v, 0, 10000000);
  if (!i.is_ok()) {
    return Status::error("expected an integer 0-10000000, got " + json_text(v));
  }
  return static_cast<uint32_t>(*i);
}

StatusOr<common::LogLevel> yaml_log_level(const Json& v) {
  common::LogLevel level;
  if (!v.is_string() || !common::parse_log_level(v.get<std::string>(), &level)) {
    return Status::error(
        "expected one of debug, info, notice, warn, error, crit, alert, emerg, got " +
        json_text(v));
  }
  return level;
}

StatusOr<std::string> role_name(const Json& v) {
  auto r = as_enum(v, {"traditional", "data_plane", "control_plane"});
  if (!r.is_ok()) {
    return Status::error("expected one of traditional, data_plane, control_plane, got " +
                         json_text(v));
  }
  return r;
}

StatusOr<ConfigProvider> provider_kind(const Json& v) {
  std::string name = v.is_string() ? v.get<std::string>() : "";
  if (name == "yaml") {
    return ConfigProvider::kYaml;
  }
  if (name == "etcd") {
    return ConfigProvider::kEtcd;
  }
  if (name == "embedded") {
    return ConfigProvider::kEmbedded;
  }
  return Status::error("expected one of yaml, etcd, embedded, got " + json_text(v));
}

StatusOr<uint16_t> yaml_port(const Json& v) {
  auto p = as_integer(v, 1, 65535);
  if (!p.is_ok()) {
    return Status::error("expected an integer 1-65535, got " + json_text(v));
  }
  return static_cast<uint16_t>(*p);
}

}  // namespace sluice::config
