#pragma once
// A user's JSON Schema (request-validation's header_schema / body_schema), compiled once with
// valijson when the conf is built and run per request. Failures are told as APISIX's
// jsonschema words them (`property "a" validation failed: ...`), from valijson's first error.

#include <memory>
#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::request_validation {

// Thread: any (immutable after compile; validate() keeps no state)
class JsonSchema {
 public:
  // Draft 7 first, then draft 4 (APISIX's jsonschema reads both). Errors say why the schema
  // is not one: `invalid body_schema: <valijson's reason>`.
  static common::StatusOr<std::shared_ptr<const JsonSchema>> compile(const plugin::Json& schema,
                                                                     std::string_view what);
  ~JsonSchema();

  // Empty when `value` is valid; else the reason, in APISIX's words where known.
  std::string validate(const plugin::Json& value) const;

 private:
  struct Impl;
  JsonSchema();
  std::unique_ptr<Impl> impl_;
  plugin::Json source_;  // the schema as given: error texts read its limits from it
};

// The text APISIX's jsonschema gives for valijson's error `description` at `context` (valijson's
// path: "<root>", "[name]", "[index]"), reading the value and the schema at that path.
std::string explain(const std::vector<std::string>& context, const std::string& description,
                    const plugin::Json& value, const plugin::Json& schema);

}  // namespace sluice::plugins::request_validation
