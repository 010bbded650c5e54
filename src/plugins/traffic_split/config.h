#pragma once
// traffic-split's conf, checked as APISIX's schema and check_schema check it (same texts).

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::traffic_split {

// One of a rule's weighted upstreams: an `upstreams` object, an inline upstream, or (neither
// given) the route's own upstream.
struct WeightedUpstream {
  std::string upstream_id;
  plugin::Json upstream;  // an object when inline; null otherwise
  int64_t weight = 1;
};

struct Rule {
  bool has_match = false;
  std::vector<plugin::Json> match;  // each item's `vars` (null when the item has none)
  // APISIX's default: the route's own upstream, weight 1.
  std::vector<WeightedUpstream> weighted_upstreams{WeightedUpstream{}};
};

struct Conf {
  std::vector<Rule> rules;
};

common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

}  // namespace sluice::plugins::traffic_split
