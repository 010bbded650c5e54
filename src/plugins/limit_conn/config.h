#pragma once
// limit-conn's conf, typed and checked with APISIX's schema and error texts.

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/limit_count/config.h"

namespace sluice::plugins::limit_conn {

using limit_count::KeyType;
using limit_count::Policy;

// Thread: any (value type)
struct Conf {
  uint64_t conn = 0;              // requests in flight per key, > 0
  uint64_t burst = 0;             // more in flight that are delayed instead of rejected
  double default_conn_delay = 0;  // seconds, > 0
  bool only_use_default_delay = false;
  KeyType key_type = KeyType::kVar;
  std::string key;
  int rejected_code = 503;
  bool has_rejected_msg = false;
  std::string rejected_msg;
  bool allow_degradation = false;
  std::string redis_prefix = "limit_conn";
  int key_ttl = 3600;       // seconds a redis entry outlives a gateway that died holding it
  limit_count::Conf redis;  // policy and the redis fields
};

// Errors are the text after APISIX's `... plugin limit-conn err: `, e.g.
// `property "conn" is required`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::limit_conn
