#pragma once
// basic-auth's confs, typed and checked with APISIX's schema texts: the route side
// (hide_credentials, anonymous_consumer, realm) and the consumer side (username, password).

#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::basic_auth {

// Thread: any (immutable after parse)
struct Conf {
  bool hide_credentials = false;
  std::string anonymous_consumer;  // empty: none
  std::string realm = "basic";     // WWW-Authenticate: Basic realm='<realm>' on a 401
};

// Thread: any (immutable after parse)
struct ConsumerConf {
  std::string username;
  std::string password;
};

// Errors are the text after APISIX's `... plugin basic-auth err: `, e.g.
// `property "hide_credentials" validation failed: wrong type: expected boolean, got string`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
// `property "username" is required`, `property "password" validation failed: wrong type:
// expected string, got number`.
common::StatusOr<ConsumerConf> parse_consumer(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/basic-auth.
extern const char kSchema[];

}  // namespace sluice::plugins::basic_auth
