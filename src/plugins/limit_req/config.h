#pragma once
// limit-req's conf, typed and checked with APISIX's schema and error texts.

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/limit_count/config.h"

namespace sluice::plugins::limit_req {

using limit_count::KeyType;
using limit_count::Policy;

// Thread: any (value type)
struct Conf {
  double rate = 0;   // requests per second, > 0
  double burst = 0;  // requests over the rate that are delayed rather than rejected, >= 0
  KeyType key_type = KeyType::kVar;
  std::string key;
  int rejected_code = 503;
  bool has_rejected_msg = false;
  std::string rejected_msg;
  bool nodelay = false;
  bool allow_degradation = false;
  // policy and the redis fields (only those members are used).
  limit_count::Conf redis;
};

// Errors are the text after APISIX's `... plugin limit-req err: `, e.g.
// `property "rate" is required`, `property "rate" validation failed: expected 0 to be
// greater than 0`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::limit_req
