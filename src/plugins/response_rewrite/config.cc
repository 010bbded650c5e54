#include "plugins/response_rewrite/config.h"

#include <fmt/format.h>

#include "schema/checks.h"

namespace sluice::plugins::response_rewrite {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_bool;
using schema::as_enum;
using schema::as_string;
using schema::FieldDecoder;

namespace {

// One `filters` item as the schema sees it, before compiling.
struct FilterSpec {
  std::string regex, replace;
  std::string scope = "once";
  std::string options = "jo";
};

StatusOr<FilterSpec> filter_item(const Json& v) {
  FilterSpec f;
  FieldDecoder d(v);
  d.require({"regex", "replace"});
  d.field("regex", &f.regex, [](const Json& s) { return as_string(s, 1); });
  d.field("scope", &f.scope, [](const Json& s) { return as_enum(s, {"once", "global"}); });
  d.field("replace", &f.replace, [](const Json& s) { return as_string(s); });
  d.field("options", &f.options, [](const Json& s) { return as_string(s); });
  if (!d.ok()) {
    return d.status();
  }
  return f;
}

StatusOr<std::vector<FilterSpec>> filter_items(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<FilterSpec> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto f = filter_item(v[i]);
    if (!f.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, f.status().message()));
    }
    out.push_back(std::move(f).value());
  }
  return out;
}

StatusOr<Json> headers_schema(const Json& v) {
  Status s = check_headers_schema(v);
  if (!s.is_ok()) {
    return s;
  }
  return v;
}

// APISIX's check_schema after the schema: headers, body_base64, vars, filters.
Status build(const Json& headers, bool body_base64, const Json& vars,
             const std::vector<FilterSpec>& filters, Conf* c) {
  if (c->has_headers) {
    auto ops = build_headers(headers);
    if (!ops.is_ok()) {
      return ops.status();
    }
    c->headers = std::move(ops).value();
  }
  if (body_base64) {
    std::string decoded;
    if (!c->has_body || c->body.empty() || !decode_base64(c->body, &decoded)) {
      return Status::error("invalid base64 content");
    }
    c->body = std::move(decoded);
  }
  if (!vars.is_null()) {
    auto e = router::Expr::compile(vars);
    if (!e.is_ok()) {
      return e.status();  // "failed to validate the 'vars' expression: ..."
    }
    if (std::string_view v = e->request_head_var(); !v.empty()) {
      return Status::error(
          fmt::format("vars: variable \"{}\" reads the request, which Sluice does not keep for the "
                      "response phases",
                      v));
    }
    c->vars = std::move(e).value();
  }
  for (const FilterSpec& f : filters) {
    auto compiled = BodyFilter::compile(f.regex, f.replace, f.options, f.scope == "global");
    if (!compiled.is_ok()) {
      return compiled.status();
    }
    c->filters.push_back(std::move(compiled).value());
  }
  return Status::ok();
}

}  // namespace

bool decode_base64(std::string_view in, std::string* out) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') {
      return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
      return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
      return c - '0' + 52;
    }
    return c == '+' ? 62 : (c == '/' ? 63 : -1);
  };
  size_t len = in.find('=');
  if (len == std::string_view::npos) {
    len = in.size();
  }
  for (size_t i = 0; i < len; ++i) {
    if (value(in[i]) < 0) {
      return false;
    }
  }
  if (len % 4 == 1) {
    return false;
  }
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; ++i) {
    acc = (acc << 6) | static_cast<uint32_t>(value(in[i]));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return true;
}

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);  // other fields pass, as APISIX 3.x's schema lets them
  Json headers;
  d.field("headers", &headers, headers_schema);
  c.has_headers = d.has("headers");
  d.field("body", &c.body, [](const Json& v) { return as_string(v); });
  c.has_body = d.has("body");
  if (c.has_body && d.has("filters")) {
    d.fail("failed to validate dependent schema for body: value wasn't supposed to match schema");
  }
  bool body_base64 = false;
  d.field("body_base64", &body_base64, as_bool);
  int64_t status = 0;
  d.field("status_code", &status, [](const Json& v) { return schema::as_integer(v, 200, 598); });
  c.status_code = static_cast<int>(status);
  Json vars;
  d.field("vars", &vars, schema::as_array);
  std::vector<FilterSpec> filters;
  d.field("filters", &filters, filter_items);
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = build(headers, body_base64, vars, filters, &c); !s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();  // response-rewrite has no metadata
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "headers": {
      "description": "new headers for response",
      "anyOf": [
        {
          "type": "object",
          "minProperties": 1,
          "patternProperties": {
            "^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}
          }
        },
        {
          "properties": {
            "add": {
              "type": "array",
              "minItems": 1,
              "items": {"type": "string", "pattern": "^[^:]+:[^:]+[^/]$"}
            },
            "set": {
              "type": "object",
              "minProperties": 1,
              "patternProperties": {
                "^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}
              }
            },
            "remove": {
              "type": "array",
              "minItems": 1,
              "items": {"type": "string", "pattern": "^[^:]+$"}
            }
          }
        }
      ]
    },
    "body": {"description": "new body for response", "type": "string"},
    "body_base64": {
      "description": "whether new body for response need base64 decode before return",
      "type": "boolean",
      "default": false
    },
    "status_code": {
      "description": "new status code for response",
      "type": "integer",
      "minimum": 200,
      "maximum": 598
    },
    "vars": {"type": "array"},
    "filters": {
      "description": "a group of filters that modify response bodyby replacing one specified string by another",
      "type": "array",
      "minItems": 1,
      "items": {
        "description": "filter that modifies response body",
        "type": "object",
        "required": ["regex", "replace"],
        "properties": {
          "regex": {"description": "match pattern on response body", "type": "string", "minLength": 1},
          "scope": {
            "description": "regex substitution range",
            "type": "string",
            "enum": ["once", "global"],
            "default": "once"
          },
          "replace": {"description": "regex substitution content", "type": "string"},
          "options": {"description": "regex options", "type": "string", "default": "jo"}
        }
      }
    }
  },
  "dependencies": {
    "body": {"not": {"required": ["filters"]}},
    "filters": {"not": {"required": ["body"]}}
  }
})JSON";

}  // namespace sluice::plugins::response_rewrite
