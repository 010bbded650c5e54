#include "plugins/referer_restriction/config.h"

#include <fmt/format.h>

#include <vector>

#include "schema/checks.h"

namespace sluice::plugins::referer_restriction {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

bool host_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
         c == '.' || c == '_';
}

// APISIX's host_def: a string matching `^\*?[0-9a-zA-Z-._]+$`.
StatusOr<std::string> host_def(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const std::string& s = v.get_ref<const std::string&>();
  std::string_view rest = s;
  if (!rest.empty() && rest[0] == '*') {
    rest.remove_prefix(1);
  }
  bool ok = !rest.empty();
  for (char c : rest) {
    ok = ok && host_char(c);
  }
  if (!ok) {
    return Status::error(
        fmt::format(R"(failed to match pattern "^\*?[0-9a-zA-Z-._]+$" with "{}")", s));
  }
  return s;
}

// An array (minItems 1) of host_def strings; duplicates are allowed, as in APISIX.
StatusOr<std::vector<std::string>> host_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = host_def(v[i]);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(std::move(s).value());
  }
  return out;
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

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::vector<std::string> white, black;
  FieldDecoder d(conf);
  d.field("bypass_missing", &c.bypass_missing, schema::as_bool);
  d.field("whitelist", &white, host_list);
  d.field("blacklist", &black, host_list);
  d.field("message", &c.message, [](const Json& v) { return schema::as_string(v, 1, 1024); });
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = one_of(d); !s.is_ok()) {
    return s;
  }
  c.whitelist = !white.empty();
  for (const std::string& h : c.whitelist ? white : black) {
    c.hosts.add(h);
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok()
                        : Status::error("referer-restriction has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "bypass_missing": {"type": "boolean", "default": false},
    "whitelist": {"type": "array", "minItems": 1,
                  "items": {"type": "string", "pattern": "^\\*?[0-9a-zA-Z-._]+$"}},
    "blacklist": {"type": "array", "minItems": 1,
                  "items": {"type": "string", "pattern": "^\\*?[0-9a-zA-Z-._]+$"}},
    "message": {"type": "string", "minLength": 1, "maxLength": 1024,
                "default": "Your referer host is not allowed"}
  },
  "oneOf": [
    {"required": ["whitelist"]},
    {"required": ["blacklist"]}
  ]
})JSON";

}  // namespace sluice::plugins::referer_restriction
