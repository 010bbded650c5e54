#pragma once
// What the snapshot builder offers a plugin that sends requests to another upstream than its
// route's (traffic-split): the snapshot's `upstreams` objects by id, and inline upstreams built
// into the snapshot like a route's own, so each worker balances, pools and health-checks them
// as it does the route's. A plugin picks one per request through Context::upstream_override.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace sluice::upstream {
struct Upstream;
}

namespace sluice::plugin {

// Thread: control (only while a snapshot is being built)
class UpstreamCatalog {
 public:
  virtual ~UpstreamCatalog() = default;
  // The `upstreams` object `id` of the snapshot being built; null when there is none.
  virtual const upstream::Upstream* find(const std::string& id) = 0;
  // Builds `conf` (an upstream object check_upstream accepted) into the snapshot being built,
  // named `id` in logs and health checks.
  virtual common::StatusOr<const upstream::Upstream*> add(const nlohmann::json& conf,
                                                          const std::string& id) = 0;

  // Counts the calls above: a chain whose plugins used the catalog points into one snapshot
  // and is built again with the next (config::build_chain does not keep it).
  uint64_t uses = 0;
};

// The Admin API's check of an upstream object (APISIX's schema_def.upstream and
// check_upstream_conf), with the same texts. The config library, which owns the decoder,
// installs it; until then every object is refused.
using UpstreamCheck = common::Status (*)(const nlohmann::json& conf);
void set_upstream_check(UpstreamCheck check);
common::Status check_upstream(const nlohmann::json& conf);

}  // namespace sluice::plugin
