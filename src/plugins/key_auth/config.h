#pragma once
// key-auth's confs, typed and checked with the texts of APISIX 3.x's schemas: the route side
// (where the key is read) and the consumer side (the key itself).

#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::key_auth {

// Thread: any (immutable after parse)
struct Conf {
  std::string header = "apikey";   // read first
  std::string query = "apikey";    // read when the header is absent
  bool hide_credentials = false;   // the upstream does not get the key
  std::string anonymous_consumer;  // empty: none; else a request without a valid key is this
};

// Errors are the text after APISIX's `... plugin key-auth err: `, e.g.
// `property "header" validation failed: wrong type: expected string, got number`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
// The consumer side: `{"key": "<string>"}`, required.
common::StatusOr<std::string> parse_consumer(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/key-auth.
extern const char kSchema[];

}  // namespace sluice::plugins::key_auth
