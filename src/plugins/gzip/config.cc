#include "plugins/gzip/config.h"

#include "schema/checks.h"

namespace sluice::plugins::gzip {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<Conf> buffers(const Json& v, Conf c) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  FieldDecoder d(v);
  d.field("number", &c.buffers_number,
          [](const Json& n) { return schema::as_integer(n, 1, INT32_MAX); });
  d.field("size", &c.buffers_size,
          [](const Json& n) { return schema::as_integer(n, 1, INT32_MAX); });
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);  // other fields pass, as APISIX's schema lets them
  coding::decode_common(d, &c.common);
  int64_t level = 1;
  d.field("comp_level", &level, [](const Json& v) { return schema::as_integer(v, 1, 9); });
  c.comp_level = static_cast<int>(level);
  d.field("buffers", &c, [&c](const Json& v) { return buffers(v, c); });
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();  // gzip has no metadata
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
    "comp_level": {"type": "integer", "minimum": 1, "maximum": 9, "default": 1},
    "http_version": {"enum": [1.1, 1.0], "default": 1.1},
    "buffers": {
      "type": "object",
      "properties": {
        "number": {"type": "integer", "minimum": 1, "default": 32},
        "size": {"type": "integer", "minimum": 1, "default": 4096}
      },
      "default": {"number": 32, "size": 4096}
    },
    "vary": {"type": "boolean"}
  }
})JSON";

}  // namespace sluice::plugins::gzip
