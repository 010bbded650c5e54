#include "plugins/proxy_mirror/config.h"

#include <fmt/format.h>

#include <charconv>

#include "plugins/proxy_rewrite/lua_text.h"
#include "schema/checks.h"

namespace sluice::plugins::proxy_mirror {

using common::Status;
using common::StatusOr;
using plugin::Json;
using proxy_rewrite::lua_quoted;
using schema::FieldDecoder;

namespace {

// APISIX's patterns, as its schema writes them (and its error texts quote them).
constexpr std::string_view kHostPattern =
    R"(^(http(s)?|grpc(s)?):\/\/([\da-zA-Z.-]+|\[[\da-fA-F:]+\])(:\d+)?$)";
constexpr std::string_view kPathPattern = R"(^/[^?&]+$)";

Status pattern_error(std::string_view pattern, const std::string& s) {
  return Status::error("failed to match pattern " + lua_quoted(pattern) + " with " + lua_quoted(s));
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
}
bool is_hex_or_colon(char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':'; }

// Splits `s` as kHostPattern reads it; false when it does not match. The port's digits are
// kept as text (the pattern allows any count).
bool split_host(std::string_view s, std::string* scheme, std::string* host, std::string* port) {
  size_t sep = s.find("://");
  if (sep == std::string_view::npos) {
    return false;
  }
  *scheme = std::string(s.substr(0, sep));
  if (*scheme != "http" && *scheme != "https" && *scheme != "grpc" && *scheme != "grpcs") {
    return false;
  }
  std::string_view rest = s.substr(sep + 3);
  size_t end = 0;
  if (!rest.empty() && rest[0] == '[') {
    end = rest.find(']');
    if (end == std::string_view::npos || end == 1) {
      return false;
    }
    for (char c : rest.substr(1, end - 1)) {
      if (!is_hex_or_colon(c)) {
        return false;
      }
    }
    *host = std::string(rest.substr(1, end - 1));
    ++end;
  } else {
    while (end < rest.size() && is_name_char(rest[end])) {
      ++end;
    }
    if (end == 0) {
      return false;
    }
    *host = std::string(rest.substr(0, end));
  }
  rest.remove_prefix(end);
  port->clear();
  if (rest.empty()) {
    return true;
  }
  if (rest[0] != ':' || rest.size() < 2) {
    return false;
  }
  for (char c : rest.substr(1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  *port = std::string(rest.substr(1));
  return true;
}

StatusOr<std::string> host_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  std::string scheme, host, port;
  if (!split_host(s, &scheme, &host, &port)) {
    return pattern_error(kHostPattern, s);
  }
  return s;
}

StatusOr<std::string> path_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  bool ok = s.size() >= 2 && s[0] == '/' && s.find_first_of("?&") == std::string::npos;
  if (!ok) {
    return pattern_error(kPathPattern, s);
  }
  return s;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::string host, mode = "replace";
  FieldDecoder d(conf);
  d.field("host", &host, host_value);
  d.field("path", &c.path, path_value);
  d.field("path_concat_mode", &mode, [](const Json& v) {
    return schema::as_enum(v, {"replace", "prefix"});
  });
  d.field("sample_ratio", &c.sample_ratio, [](const Json& v) -> StatusOr<double> {
    auto n = schema::as_number(v, 0.00001, false);
    if (n.is_ok() && *n > 1) {
      return Status::error(fmt::format("expected {} to be at most 1", schema::json_text(v)));
    }
    return n;
  });
  d.require({"host"});
  if (!d.ok()) {
    return d.status();
  }
  c.prefix = mode == "prefix";
  std::string scheme, port;
  split_host(host, &scheme, &c.host, &port);
  if (scheme == "grpc" || scheme == "grpcs") {
    return Status::error(fmt::format(
        "property \"host\" validation failed: {} mirrors are not supported by Sluice (http and "
        "https are)",
        scheme));
  }
  c.https = scheme == "https";
  c.port = c.https ? 443 : 80;
  if (!port.empty()) {
    unsigned value = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), value);
    if (r.ec != std::errc() || value == 0 || value > 65535) {
      return Status::error(
          fmt::format("property \"host\" validation failed: port {} is out of range", port));
    }
    c.port = static_cast<uint16_t>(value);
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse /*use*/) {
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

void mirror_target(const Conf& c, std::string_view uri, std::string_view args, std::string* out) {
  out->clear();
  if (!c.path.empty()) {
    out->append(c.path);
  }
  if (c.path.empty() || c.prefix) {
    out->append(uri);
  }
  if (!args.empty()) {
    out->push_back('?');
    out->append(args);
  }
}

}  // namespace sluice::plugins::proxy_mirror
