#include "config/field_decoder.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "router/ip.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
         c == '[' || c == ']' || c == ':';
}

}  // namespace

Status invalid_configuration(const Status& fragment) {
  return Status::error("invalid configuration: " + fragment.message());
}

StatusOr<std::string> as_id(const Json& v) {
  if (v.is_number()) {
    auto i = as_integer(v, 1, INT64_MAX);
    if (i.is_ok()) {
      return std::to_string(*i);
    }
  } else if (v.is_string() && valid_id(v.get_ref<const std::string&>())) {
    return v.get<std::string>();
  }
  return Status::error("object matches none of the required");
}

StatusOr<std::string> as_host(const Json& v) {
  auto s = as_string(v);
  if (!s.is_ok()) {
    return s;
  }
  std::string_view h = *s;
  if (h.size() > 255) {  // a DNS name is at most 253 octets; the router keeps 256
    return Status::error(
        fmt::format("string too long, expected at most 255 characters, got {}", h.size()));
  }
  if (!h.empty() && h.front() == '*') {
    h.remove_prefix(1);
  }
  // The router ignores one trailing dot ("a.com." is "a.com"); "." or "*." name nothing.
  std::string_view name = h;
  if (!name.empty() && name.back() == '.') {
    name.remove_suffix(1);
  }
  bool ok = !name.empty() && name != ".";
  for (char c : h) {
    ok = ok && host_char(c);
  }
  if (!ok) {
    return Status::error(
        fmt::format(R"(failed to match pattern "^\*?[0-9a-zA-Z-._\[\]:]+$" with "{}")", *s));
  }
  return s;
}

StatusOr<std::map<std::string, std::string>> as_labels(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    auto s = as_string(value, 1, 256);
    if (s.is_ok() && s->find_first_of(" \t\r\n\f\v") != std::string::npos) {
      s = Status::error(fmt::format(R"(failed to match pattern "^\S+$" with "{}")", *s));
    }
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate {} (matching \".*\"): {}", key, s.status().message()));
    }
    out.emplace(key, std::move(s).value());
  }
  return out;
}

StatusOr<TimeoutConf> as_timeout(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  TimeoutConf t;
  FieldDecoder d(v);
  auto positive = [](const Json& x) { return as_number(x, 0, true); };
  d.field("connect", &t.connect, positive);
  d.field("send", &t.send, positive);
  d.field("read", &t.read, positive);
  for (const char* name : {"connect", "send", "read"}) {
    if (d.ok() && !d.has(name)) {
      d.fail(fmt::format("property \"{}\" is required", name));
    }
  }
  if (!d.ok()) {
    return d.status();
  }
  return t;
}

StatusOr<int64_t> as_timestamp(const Json& v) { return as_integer(v, 0, INT64_MAX); }

StatusOr<int> as_enable_status(const Json& v) {
  auto i = as_integer(v);
  if (!i.is_ok()) {
    return i.status();
  }
  if (*i != 0 && *i != 1) {
    return Status::error("matches none of the enum values");
  }
  return static_cast<int>(*i);
}

StatusOr<std::string> as_sni(const Json& v) {
  auto s = as_string(v);
  if (!s.is_ok()) {
    return s;
  }
  std::string_view h = *s;
  if (!h.empty() && h.front() == '*') {
    h.remove_prefix(1);
  }
  bool ok = !h.empty();
  for (char c : h) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_');
  }
  if (!ok) {
    return Status::error(
        fmt::format(R"(failed to match pattern "^\*?[0-9a-zA-Z-._]+$" with "{}")", *s));
  }
  return s;
}

StatusOr<std::string> as_ip_or_cidr(const Json& v) {
  auto s = as_string(v);
  if (s.is_ok() && !router::parse_cidr(*s).is_ok()) {
    return Status::error("object matches none of the required");
  }
  return s;
}

Status finish_decode(const FieldDecoder& d, const Json& plugins, PluginUse use) {
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  if (plugins.is_null()) {
    return Status::ok();
  }
  return check_plugins(plugins, use);
}

Status finish_decode(const FieldDecoder& d, const std::optional<UpstreamConf>& upstream,
                     const Json& plugins, PluginUse use) {
  if (d.ok() && upstream) {
    if (Status st = check_upstream_rules(*upstream); !st.is_ok()) {
      return st;
    }
  }
  return finish_decode(d, plugins, use);
}

}  // namespace sluice::config
