#include "plugins/fault_injection/config.h"

#include <fmt/format.h>

#include "schema/checks.h"

namespace sluice::plugins::fault_injection {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_integer;
using schema::FieldDecoder;

namespace {

StatusOr<int> int_in(const Json& v, int64_t min, int64_t max) {
  auto i = as_integer(v, min, max);
  if (!i.is_ok()) {
    return i.status();
  }
  return static_cast<int>(*i);
}

// `vars`: {type = "array", maxItems = 20, items = {type = "array"}}, then each item compiled
// as one lua-resty-expr expression (APISIX's check_schema calls expr.new on each).
StatusOr<std::vector<router::Expr>> vars(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.size() > 20) {
    return Status::error("expect array to have at most 20 items");
  }
  std::vector<router::Expr> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_array()) {
      return Status::error(fmt::format("failed to validate item {}: {}", i + 1,
                                       schema::wrong_type("array", v[i]).message()));
    }
    auto e = router::Expr::compile(v[i]);
    if (!e.is_ok()) {
      return e.status();
    }
    out.push_back(std::move(e).value());
  }
  return out;
}

// A header value: a string or a number (Lua's tostring of it), with `$var`s.
StatusOr<response_rewrite::ValueTemplate> header_value(const Json& v) {
  if (v.is_string()) {
    return response_rewrite::ValueTemplate::parse(v.get<std::string>());
  }
  if (v.is_number_integer() || v.is_number_unsigned()) {
    return response_rewrite::ValueTemplate::literal(v.dump());
  }
  if (v.is_number_float()) {
    return response_rewrite::ValueTemplate::literal(fmt::format("{}", v.get<double>()));
  }
  return Status::error("object matches none of the required");
}

StatusOr<Abort> abort_of(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  Abort a;
  a.on = true;
  FieldDecoder d(v);
  d.require({"http_status"});
  d.field("http_status", &a.http_status, [](const Json& x) { return int_in(x, 200, INT32_MAX); });
  d.field("body", &a.body, [](const Json& x) -> StatusOr<response_rewrite::ValueTemplate> {
    auto s = schema::as_string(x, 0);
    if (!s.is_ok()) {
      return s.status();
    }
    return response_rewrite::ValueTemplate::parse(*s);
  });
  a.has_body = d.has("body");
  d.field("percentage", &a.percentage, [](const Json& x) { return int_in(x, 0, 100); });
  d.field("vars", &a.vars, vars);
  a.has_vars = d.has("vars");
  if (d.ok() && d.has("headers")) {
    const Json& h = v.at("headers");
    if (!h.is_object()) {
      d.fail(schema::property_error("headers", schema::wrong_type("object", h)).message());
    } else if (h.empty()) {
      d.fail(schema::property_error("headers",
                                    Status::error("expect object to have at least 1 properties"))
                 .message());
    }
    for (auto it = h.begin(); d.ok() && h.is_object() && it != h.end(); ++it) {
      if (it.key().empty() || it.key().find(':') != std::string::npos) {
        // APISIX's patternProperties "^[^:]+$" leaves such a name unchecked and nginx would
        // send a broken field: refused.
        d.fail(
            fmt::format("property \"headers\" validation failed: header name \"{}\" must "
                        "match \"^[^:]+$\"",
                        it.key()));
        break;
      }
      auto t = header_value(it.value());
      if (!t.is_ok()) {
        d.fail(schema::property_error("headers", schema::property_error(it.key(), t.status()))
                   .message());
        break;
      }
      a.headers.emplace_back(it.key(), std::move(t).value());
    }
  }
  if (!d.ok()) {
    return d.status();
  }
  return a;
}

StatusOr<Delay> delay_of(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  Delay dl;
  dl.on = true;
  FieldDecoder d(v);
  d.require({"duration"});
  d.field("duration", &dl.duration, [](const Json& x) { return schema::as_number(x, 0, false); });
  d.field("percentage", &dl.percentage, [](const Json& x) { return int_in(x, 0, 100); });
  d.field("vars", &dl.vars, vars);
  dl.has_vars = d.has("vars");
  if (!d.ok()) {
    return d.status();
  }
  return dl;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object() || conf.empty()) {
    // The schema's minProperties = 1: APISIX's answer when neither abort nor delay is given.
    return Status::error("expect object to have at least 1 properties");
  }
  Conf c;
  FieldDecoder d(conf);
  d.field("abort", &c.abort, abort_of);
  d.field("delay", &c.delay, delay_of);
  if (!d.ok()) {
    return d.status();
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
    "abort": {
      "type": "object",
      "properties": {
        "http_status": {"type": "integer", "minimum": 200},
        "body": {"type": "string", "minLength": 0},
        "headers": {"type": "object", "minProperties": 1,
                    "patternProperties": {"^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}}},
        "percentage": {"type": "integer", "minimum": 0, "maximum": 100},
        "vars": {"type": "array", "maxItems": 20, "items": {"type": "array"}}
      },
      "required": ["http_status"]
    },
    "delay": {
      "type": "object",
      "properties": {
        "duration": {"type": "number", "minimum": 0},
        "percentage": {"type": "integer", "minimum": 0, "maximum": 100},
        "vars": {"type": "array", "maxItems": 20, "items": {"type": "array"}}
      },
      "required": ["duration"]
    }
  },
  "minProperties": 1
})JSON";

}  // namespace sluice::plugins::fault_injection
