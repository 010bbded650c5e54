#include "plugins/api_breaker/config.h"

#include <fmt/format.h>

#include "plugins/api_breaker/breaker_table.h"
#include "schema/checks.h"

namespace sluice::plugins::api_breaker {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_integer;
using schema::FieldDecoder;

namespace {

// http_statuses: {type = "array", minItems = 1, items = {type = "integer", minimum, maximum},
// uniqueItems = true}, with jsonschema's texts.
StatusOr<std::vector<int>> statuses(const Json& v, int min, int max) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = as_integer(v[i], min, max);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] == *s) {
        return Status::error(
            fmt::format("expected unique items but items {} and {} are equal", j + 1, i + 1));
      }
    }
    out.push_back(static_cast<int>(*s));
  }
  return out;
}

// failures / successes: integer >= 1; Sluice's packed state holds up to kMaxCount.
StatusOr<uint64_t> count(const Json& v) {
  auto i = as_integer(v, 1, INT64_MAX);
  if (!i.is_ok()) {
    return i.status();
  }
  if (static_cast<uint64_t>(*i) > BreakerTable::kMaxCount) {
    return Status::error(
        fmt::format("{} is more than Sluice supports (at most {})", *i, BreakerTable::kMaxCount));
  }
  return static_cast<uint64_t>(*i);
}

StatusOr<std::pair<std::string, response_rewrite::ValueTemplate>> header(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  std::string key, value;
  FieldDecoder d(v);
  d.require({"key", "value"});
  d.field("key", &key, [](const Json& x) { return schema::as_string(x, 1); });
  d.field("value", &value, [](const Json& x) { return schema::as_string(x, 1); });
  if (d.ok() && key.find(':') != std::string::npos) {
    d.fail(fmt::format("header name \"{}\" has a ':'", key));
  }
  if (!d.ok()) {
    return d.status();
  }
  auto t = response_rewrite::ValueTemplate::parse(value);
  if (!t.is_ok()) {
    return schema::property_error("value", t.status());
  }
  return std::make_pair(std::move(key), std::move(t).value());
}

StatusOr<std::vector<std::pair<std::string, response_rewrite::ValueTemplate>>> headers(
    const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  std::vector<std::pair<std::string, response_rewrite::ValueTemplate>> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto h = header(v[i]);
    if (!h.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, h.status().message()));
    }
    out.push_back(std::move(h).value());
  }
  return out;
}

Status side(const Json& v, bool unhealthy, Conf* c) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  FieldDecoder d(v);
  if (unhealthy) {
    d.field("http_statuses", &c->unhealthy_statuses,
            [](const Json& x) { return statuses(x, 500, 599); });
    d.field("failures", &c->failures, count);
  } else {
    d.field("http_statuses", &c->healthy_statuses,
            [](const Json& x) { return statuses(x, 200, 499); });
    d.field("successes", &c->successes, count);
  }
  return d.status();
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  d.require({"break_response_code"});
  d.field("break_response_code", &c.break_response_code, [](const Json& v) -> StatusOr<int> {
    auto i = as_integer(v, 200, 599);
    if (!i.is_ok()) {
      return i.status();
    }
    return static_cast<int>(*i);
  });
  d.field("break_response_body", &c.break_response_body,
          [](const Json& v) { return schema::as_string(v, 0); });
  c.has_body = d.has("break_response_body");
  d.field("break_response_headers", &c.break_response_headers, headers);
  d.field("max_breaker_sec", &c.max_breaker_sec, [](const Json& v) -> StatusOr<uint64_t> {
    auto i = as_integer(v, 3, INT64_MAX);
    if (!i.is_ok()) {
      return i.status();
    }
    return static_cast<uint64_t>(*i);
  });
  bool unused = false;
  d.field("unhealthy", &unused, [&c](const Json& v) -> StatusOr<bool> {
    Status s = side(v, true, &c);
    if (!s.is_ok()) {
      return s;
    }
    return true;
  });
  d.field("healthy", &unused, [&c](const Json& v) -> StatusOr<bool> {
    Status s = side(v, false, &c);
    if (!s.is_ok()) {
      return s;
    }
    return true;
  });
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
    "break_response_code": {"type": "integer", "minimum": 200, "maximum": 599},
    "break_response_body": {"type": "string"},
    "break_response_headers": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "key": {"type": "string", "minLength": 1},
          "value": {"type": "string", "minLength": 1}
        },
        "required": ["key", "value"]
      }
    },
    "max_breaker_sec": {"type": "integer", "minimum": 3, "default": 300},
    "unhealthy": {
      "type": "object",
      "properties": {
        "http_statuses": {"type": "array", "minItems": 1, "uniqueItems": true, "default": [500],
                          "items": {"type": "integer", "minimum": 500, "maximum": 599}},
        "failures": {"type": "integer", "minimum": 1, "default": 3}
      },
      "default": {"http_statuses": [500], "failures": 3}
    },
    "healthy": {
      "type": "object",
      "properties": {
        "http_statuses": {"type": "array", "minItems": 1, "uniqueItems": true, "default": [200],
                          "items": {"type": "integer", "minimum": 200, "maximum": 499}},
        "successes": {"type": "integer", "minimum": 1, "default": 3}
      },
      "default": {"http_statuses": [200], "successes": 3}
    }
  },
  "required": ["break_response_code"]
})JSON";

}  // namespace sluice::plugins::api_breaker
