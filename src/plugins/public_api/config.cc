#include "plugins/public_api/config.h"

#include "schema/checks.h"

namespace sluice::plugins::public_api {

using common::Status;
using common::StatusOr;
using plugin::Json;

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::string category;
  schema::FieldDecoder d(conf);
  d.field("category", &category, [](const Json& v) { return schema::as_string(v); });
  d.field("uri", &c.uri, [](const Json& v) -> StatusOr<std::optional<std::string>> {
    auto s = schema::as_string(v);
    if (!s.is_ok()) {
      return s.status();
    }
    return std::optional<std::string>(std::move(s).value());
  });
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("public-api has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "category": {"type": "string", "default": "security",
                 "description": "This field is used for plugin classification"},
    "uri": {"type": "string"}
  }
})JSON";

}  // namespace sluice::plugins::public_api
