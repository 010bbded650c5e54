#include "plugins/ua_restriction/config.h"

#include <fmt/format.h>

#include "schema/checks.h"

namespace sluice::plugins::ua_restriction {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

// An array (minItems 1) of non-empty strings; duplicates are allowed, as in APISIX.
StatusOr<std::vector<std::string>> pattern_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = schema::as_string(v[i], 1);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

// oneOf: [{required: [allowlist]}, {required: [denylist]}].
Status one_of(const FieldDecoder& d) {
  const bool a = d.has("allowlist");
  const bool b = d.has("denylist");
  if (a && b) {
    return Status::error("value should match only one schema, but matches both schemas 1 and 2");
  }
  if (!a && !b) {
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
  std::vector<std::string> allow, deny;
  FieldDecoder d(conf);
  d.field("bypass_missing", &c.bypass_missing, schema::as_bool);
  d.field("allowlist", &allow, pattern_list);
  d.field("denylist", &deny, pattern_list);
  d.field("message", &c.message, [](const Json& v) { return schema::as_string(v, 1, 1024); });
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = one_of(d); !s.is_ok()) {
    return s;
  }
  c.allow = !allow.empty();
  // check_schema compiles each pattern (re_match_compile) and returns its error as it is.
  for (const std::string& p : c.allow ? allow : deny) {
    auto rule = proxy_rewrite::RegexRule::compile(p, "");
    if (!rule.is_ok()) {
      return rule.status();
    }
    c.rules.push_back(std::move(rule).value());
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("ua-restriction has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "bypass_missing": {"type": "boolean", "default": false},
    "allowlist": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "denylist": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    "message": {"type": "string", "minLength": 1, "maxLength": 1024, "default": "Not allowed"}
  },
  "oneOf": [
    {"required": ["allowlist"]},
    {"required": ["denylist"]}
  ]
})JSON";

}  // namespace sluice::plugins::ua_restriction
