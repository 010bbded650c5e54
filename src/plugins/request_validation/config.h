#pragma once
// request-validation's conf, checked with APISIX's schema and texts; the user's schemas are
// compiled here, once per conf.

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/request_validation/json_schema.h"

namespace sluice::plugins::request_validation {

// Thread: any (immutable once parsed)
struct Conf {
  std::shared_ptr<const JsonSchema> header_schema;  // null: none
  std::shared_ptr<const JsonSchema> body_schema;
  int rejected_code = 400;
  bool has_rejected_msg = false;
  std::string rejected_msg;
  // The header names header_schema names at its top level (properties, required), for the
  // case-insensitive lookup ngx.req.get_headers() gives APISIX's validator.
  std::vector<std::string> header_names;
};

// Errors are the text after `... plugin request-validation err: `, e.g. `object matches none of
// the requireds: ["body_schema"] or ["header_schema"]`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::request_validation
