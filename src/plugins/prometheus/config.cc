#include "plugins/prometheus/config.h"

#include "schema/checks.h"

namespace sluice::plugins::prometheus {

using common::Status;
using common::StatusOr;

StatusOr<Conf> parse(const plugin::Json& conf) {
  Conf c;
  schema::FieldDecoder d(conf);
  d.field("prefer_name", &c.prefer_name, schema::as_bool);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

Status check(const plugin::Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "prefer_name": {"type": "boolean", "default": false}
  }
})JSON";

}  // namespace sluice::plugins::prometheus
