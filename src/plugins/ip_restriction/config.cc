#include "plugins/ip_restriction/config.h"

#include <fmt/format.h>

#include <vector>

#include "router/ip.h"
#include "schema/checks.h"

namespace sluice::plugins::ip_restriction {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// ip_def's ipv4_seg: 0-255 without a leading zero.
bool ipv4_seg(std::string_view s) {
  if (s.empty() || s.size() > 3 || (s.size() > 1 && s[0] == '0')) {
    return false;
  }
  int n = 0;
  for (char c : s) {
    if (!is_digit(c)) {
      return false;
    }
    n = n * 10 + (c - '0');
  }
  return n <= 255;
}

bool ipv4_def(std::string_view s) {
  for (int i = 0; i < 4; ++i) {
    size_t dot = i < 3 ? s.find('.') : s.size();
    if (dot == std::string_view::npos || !ipv4_seg(s.substr(0, dot))) {
      return false;
    }
    s.remove_prefix(i < 3 ? dot + 1 : dot);
  }
  return true;
}

// ip_def's IPv6/CIDR address part, `([a-fA-F0-9]{0,4}:){1,8}(:[a-fA-F0-9]{0,4}){0,8}
// ([a-fA-F0-9]{0,4})?`: hex groups of at most 4 digits and at least one colon.
bool ipv6_def(std::string_view s) {
  int run = 0;
  int colons = 0;
  for (char c : s) {
    if (c == ':') {
      ++colons;
      run = 0;
    } else if (!is_hex(c) || ++run > 4) {
      return false;
    }
  }
  return colons >= 1 && colons <= 16;
}

// The prefix of ip_def's IPv4/CIDR (`([12]?[0-9]|3[0-2])`) and IPv6/CIDR (`[0-9]{1,3}`).
bool v4_prefix(std::string_view s) {
  if (s.empty() || s.size() > 2 || !is_digit(s[0]) || (s.size() == 2 && !is_digit(s[1]))) {
    return false;
  }
  return s.size() == 1 || s[0] == '1' || s[0] == '2' || (s[0] == '3' && s[1] <= '2');
}
bool v6_prefix(std::string_view s) {
  if (s.empty() || s.size() > 3) {
    return false;
  }
  for (char c : s) {
    if (!is_digit(c)) {
      return false;
    }
  }
  return true;
}

// An array (minItems 1) of ip_def strings; the entries that ip_def lets through but that are
// no address block fail later, in check_schema's order (all of whitelist, then blacklist).
StatusOr<std::vector<std::string>> ip_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || !matches_ip_def(v[i].get_ref<const std::string&>())) {
      return Status::error(
          fmt::format("failed to validate item {}: object matches none of the required", i + 1));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

StatusOr<int> response_code_value(const Json& v) {
  auto n = schema::as_integer(v, 403, 404);
  if (!n.is_ok()) {
    return n.status();
  }
  return static_cast<int>(*n);
}

// oneOf: [{required: [whitelist]}, {required: [blacklist]}].
Status one_of(const FieldDecoder& d) {
  const bool w = d.has("whitelist");
  const bool b = d.has("blacklist");
  if (w && b) {
    return Status::error("value should match only one schema, but matches both schemas 1 and 2");
  }
  if (!w && !b) {
    return Status::error("value should match only one schema, but matches none");
  }
  return Status::ok();
}

}  // namespace

bool matches_ip_def(std::string_view text) {
  router::IpAddr ip;
  if (parse_ip(text, &ip)) {
    return true;  // format ipv4 or ipv6
  }
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  std::string_view addr = text.substr(0, slash);
  std::string_view len = text.substr(slash + 1);
  return (ipv4_def(addr) && v4_prefix(len)) || (ipv6_def(addr) && v6_prefix(len));
}

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::vector<std::string> white, black;
  FieldDecoder d(conf);
  d.field("message", &c.message, [](const Json& v) { return schema::as_string(v, 1, 1024); });
  d.field("whitelist", &white, ip_list);
  d.field("blacklist", &black, ip_list);
  d.field("response_code", &c.response_code, response_code_value);
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = one_of(d); !s.is_ok()) {
    return s;
  }
  c.whitelist = !white.empty();
  // check_schema's address check; parse_cidr's error is APISIX's text.
  for (const std::string& entry : c.whitelist ? white : black) {
    auto block = router::parse_cidr(entry);
    if (!block.is_ok()) {
      return block.status();
    }
    c.set.add(*block);
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("ip-restriction has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "message": {"type": "string", "minLength": 1, "maxLength": 1024,
                "default": "Your IP address is not allowed"},
    "response_code": {"type": "integer", "minimum": 403, "maximum": 404, "default": 403},
    "whitelist": {
      "type": "array", "minItems": 1,
      "items": {"anyOf": [
        {"title": "IPv4", "type": "string", "format": "ipv4"},
        {"title": "IPv4/CIDR", "type": "string",
         "pattern": "^([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])/([12]?[0-9]|3[0-2])$"},
        {"title": "IPv6", "type": "string", "format": "ipv6"},
        {"title": "IPv6/CIDR", "type": "string",
         "pattern": "^([a-fA-F0-9]{0,4}:){1,8}(:[a-fA-F0-9]{0,4}){0,8}([a-fA-F0-9]{0,4})?/[0-9]{1,3}$"}
      ]}
    },
    "blacklist": {
      "type": "array", "minItems": 1,
      "items": {"anyOf": [
        {"title": "IPv4", "type": "string", "format": "ipv4"},
        {"title": "IPv4/CIDR", "type": "string",
         "pattern": "^([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])/([12]?[0-9]|3[0-2])$"},
        {"title": "IPv6", "type": "string", "format": "ipv6"},
        {"title": "IPv6/CIDR", "type": "string",
         "pattern": "^([a-fA-F0-9]{0,4}:){1,8}(:[a-fA-F0-9]{0,4}){0,8}([a-fA-F0-9]{0,4})?/[0-9]{1,3}$"}
      ]}
    }
  },
  "oneOf": [
    {"required": ["whitelist"]},
    {"required": ["blacklist"]}
  ]
})JSON";

}  // namespace sluice::plugins::ip_restriction
