#include "plugins/request_validation/config.h"

#include "schema/checks.h"

namespace sluice::plugins::request_validation {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<Json> object(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  return v;
}

std::vector<std::string> top_names(const Json& s) {
  std::vector<std::string> out;
  if (s.contains("properties") && s.at("properties").is_object()) {
    for (const auto& [k, _] : s.at("properties").items()) {
      out.push_back(k);
    }
  }
  if (s.contains("required") && s.at("required").is_array()) {
    for (const Json& k : s.at("required")) {
      if (k.is_string()) {
        out.push_back(k.get<std::string>());
      }
    }
  }
  return out;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  Json header, body;
  FieldDecoder d(conf);
  d.field("body_schema", &body, object);
  d.field("header_schema", &header, object);
  d.field("rejected_code", &c.rejected_code, [](const Json& v) -> StatusOr<int> {
    auto i = schema::as_integer(v, 200, 599);
    if (!i.is_ok()) {
      return i.status();
    }
    return static_cast<int>(*i);
  });
  d.field("rejected_msg", &c.rejected_msg,
          [](const Json& v) { return schema::as_string(v, 1, 256); });
  c.has_rejected_msg = d.has("rejected_msg");
  if (d.ok() && !d.has("body_schema") && !d.has("header_schema")) {
    d.fail(R"(object matches none of the requireds: ["body_schema"] or ["header_schema"])");
  }
  if (!d.ok()) {
    return d.status();
  }
  // APISIX's check_schema then checks that each is a schema (core.schema.valid).
  if (d.has("body_schema")) {
    auto s = JsonSchema::compile(body, "body_schema");
    if (!s.is_ok()) {
      return s.status();
    }
    c.body_schema = *s;
  }
  if (d.has("header_schema")) {
    auto s = JsonSchema::compile(header, "header_schema");
    if (!s.is_ok()) {
      return s.status();
    }
    c.header_schema = *s;
    c.header_names = top_names(header);
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "header_schema": {"type": "object"},
    "body_schema": {"type": "object"},
    "rejected_code": {"type": "integer", "minimum": 200, "maximum": 599, "default": 400},
    "rejected_msg": {"type": "string", "minLength": 1, "maxLength": 256}
  },
  "anyOf": [
    {"required": ["body_schema"]},
    {"required": ["header_schema"]}
  ]
})JSON";

}  // namespace sluice::plugins::request_validation
