#pragma once
// public-api's conf: `uri` (APISIX 3.x's schema: a string; absent: the request's uri), and
// APISIX's `category` field, accepted as its schema does.

#include <optional>
#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::public_api {

// Thread: any (immutable after parse)
struct Conf {
  std::optional<std::string> uri;
};

// Errors are the text after APISIX's `... plugin public-api err: `, e.g.
// `property "uri" validation failed: wrong type: expected string, got number`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::public_api
