#include "plugins/redirect/config.h"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "plugins/proxy_rewrite/lua_text.h"
#include "schema/checks.h"

namespace sluice::plugins::redirect {

using common::Status;
using common::StatusOr;
using plugin::Json;
using proxy_rewrite::lua_quoted;
using schema::FieldDecoder;

namespace {

// APISIX's pattern for `uri` (its schema's and its parser's).
constexpr std::string_view kUriPattern =
    R"((\\\$[0-9a-zA-Z_]+)|\$\{([0-9a-zA-Z_]+)\}|\$([0-9a-zA-Z_]+)|(\$|[^$\\]+))";

// jsonschema counts a string's length in UTF-8 characters.
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }
  return n;
}

// APISIX's schema has no maximum; a status line has three digits, so Sluice stops at 999.
StatusOr<int> ret_code_value(const Json& v) {
  auto n = schema::as_integer(v, 200, 999);
  if (!n.is_ok()) {
    return n.status();
  }
  return static_cast<int>(*n);
}

StatusOr<std::string> uri_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  if (size_t n = utf8_length(s); n < 2) {
    return Status::error(fmt::format("string too short, expected at least 2, got {}", n));
  }
  if (!UriTemplate::matches_schema_pattern(s)) {
    return Status::error("failed to match pattern " + lua_quoted(kUriPattern) + " with " +
                         lua_quoted(s));
  }
  return s;
}

StatusOr<std::vector<std::string>> regex_uri_value(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.size() < 2) {
    return Status::error("expect array to have at least 2 items");
  }
  if (v.size() > 2) {
    return Status::error("expect array to have at most 2 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return Status::error(fmt::format("failed to validate item {}: {}", i + 1,
                                       schema::wrong_type("string", v[i]).message()));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// oneOf: [{required: [uri]}, {required: [regex_uri]}, {required: [http_to_https]}]. A
// property only has to be present, whatever its value (`http_to_https: false` counts).
Status one_of(const FieldDecoder& d) {
  static constexpr std::array<const char*, 3> kNames = {"uri", "regex_uri", "http_to_https"};
  size_t matched = 0;
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (!d.has(kNames[i])) {
      continue;
    }
    if (matched != 0) {
      return Status::error(
          fmt::format("value should match only one schema, but matches both schemas {} and {}",
                      matched, i + 1));
    }
    matched = i + 1;
  }
  if (matched == 0) {
    return Status::error("value should match only one schema, but matches none");
  }
  return Status::ok();
}

// check_schema's own checks after the schema, in its order; then Sluice's (the `uri`
// template's variables).
Status finish(const std::vector<std::string>& regex_pair, const std::string& uri_text, Conf* c) {
  if (!regex_pair.empty()) {
    auto rule = proxy_rewrite::RegexRule::compile(regex_pair[0], regex_pair[1]);
    if (!rule.is_ok()) {
      return Status::error(fmt::format("invalid regex_uri ({}, {}), err:{}", regex_pair[0],
                                       regex_pair[1], rule.status().message()));
    }
    c->regex_uri = std::move(rule).value();
  }
  if (c->http_to_https && c->append_query_string) {
    return Status::error(
        "only one of `http_to_https` and `append_query_string` can be configured.");
  }
  if (c->has_uri) {
    auto t = UriTemplate::parse(uri_text);
    if (!t.is_ok()) {
      return Status::error("uri: " + t.status().message());
    }
    c->uri = std::move(t).value();
  }
  return Status::ok();
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::string uri_text;
  std::vector<std::string> regex_pair;
  FieldDecoder d(conf);
  d.field("ret_code", &c.ret_code, ret_code_value);
  d.field("uri", &uri_text, uri_value);
  c.has_uri = d.has("uri");
  d.field("regex_uri", &regex_pair, regex_uri_value);
  d.field("http_to_https", &c.http_to_https, schema::as_bool);
  c.has_http_to_https = d.has("http_to_https");
  d.field("encode_uri", &c.encode_uri, schema::as_bool);
  d.field("append_query_string", &c.append_query_string, schema::as_bool);
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = one_of(d); !s.is_ok()) {
    return s;
  }
  if (Status s = finish(regex_pair, uri_text, &c); !s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("redirect has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "ret_code": {"type": "integer", "minimum": 200, "default": 302},
    "uri": {"type": "string", "minLength": 2,
            "pattern": "(\\\\\\$[0-9a-zA-Z_]+)|\\$\\{([0-9a-zA-Z_]+)\\}|\\$([0-9a-zA-Z_]+)|(\\$|[^$\\\\]+)"},
    "regex_uri": {
      "description": "params for generating new uri that substitute from client uri, first param is regular expression, the second one is uri template",
      "type": "array", "maxItems": 2, "minItems": 2,
      "items": {"description": "regex uri", "type": "string"}
    },
    "http_to_https": {"type": "boolean"},
    "encode_uri": {"type": "boolean", "default": false},
    "append_query_string": {"type": "boolean", "default": false}
  },
  "oneOf": [
    {"required": ["uri"]},
    {"required": ["regex_uri"]},
    {"required": ["http_to_https"]}
  ]
})JSON";

}  // namespace sluice::plugins::redirect
