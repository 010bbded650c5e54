#pragma once
// ChashBalancer: consistent hashing. The request's key hash (PickArgs::hash, from the
// upstream's HashKey) finds a point on the upstream's ChashRing; when that point's node is not
// eligible (already tried, unresolved, or outside the highest eligible priority group) the
// walk goes on to the next points of the ring, as APISIX's retry takes the ring's next server.

#include "upstream/balancer.h"

namespace sluice::upstream {

// Stateless: the ring lives in the (shared, immutable) Upstream.
// Thread: worker
class ChashBalancer : public Balancer {
 public:
  int pick(const Upstream& up, const PickArgs& args) override;
};

}  // namespace sluice::upstream
