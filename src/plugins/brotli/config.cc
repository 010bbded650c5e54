#include "plugins/brotli/config.h"

#include <initializer_list>

#include "schema/checks.h"

namespace sluice::plugins::brotli {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<int> ranged(const Json& v, int min, int max) {
  auto i = schema::as_integer(v, min, max);
  if (!i.is_ok()) {
    return i.status();
  }
  return static_cast<int>(*i);
}

// type integer, then enum: jsonschema tests the type first.
StatusOr<int> one_of(const Json& v, std::initializer_list<int> allowed) {
  auto i = schema::as_integer(v, INT64_MIN, INT64_MAX);
  if (!i.is_ok()) {
    return i.status();
  }
  for (int a : allowed) {
    if (*i == a) {
      return a;
    }
  }
  return Status::error("matches none of the enum values");
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);  // other fields pass, as APISIX's schema lets them
  coding::decode_common(d, &c.common);
  d.field("mode", &c.mode, [](const Json& v) { return ranged(v, 0, 2); });
  d.field("comp_level", &c.comp_level, [](const Json& v) { return ranged(v, 0, 11); });
  d.field("lgwin", &c.lgwin, [](const Json& v) {
    return one_of(v, {0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24});
  });
  d.field("lgblock", &c.lgblock, [](const Json& v) {
    return one_of(v, {0, 16, 17, 18, 19, 20, 21, 22, 23, 24});
  });
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();  // brotli has no metadata
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "types": {
      "anyOf": [
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        {"enum": ["*"]}
      ],
      "default": ["text/html"]
    },
    "min_length": {"type": "integer", "minimum": 1, "default": 20},
    "mode": {"type": "integer", "minimum": 0, "maximum": 2, "default": 0},
    "comp_level": {"type": "integer", "minimum": 0, "maximum": 11, "default": 6},
    "lgwin": {
      "type": "integer",
      "default": 19,
      "enum": [0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]
    },
    "lgblock": {"type": "integer", "default": 0, "enum": [0, 16, 17, 18, 19, 20, 21, 22, 23, 24]},
    "http_version": {"enum": [1.1, 1.0], "default": 1.1},
    "vary": {"type": "boolean"}
  }
})JSON";

}  // namespace sluice::plugins::brotli
