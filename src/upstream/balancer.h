#pragma once
// Smooth weighted round-robin (the nginx algorithm): each pick adds every node's weight to its
// current value, takes the largest, and subtracts the total from it. Weights 5,1,1 give
// a a b a c a a — heavy nodes interleaved, never bunched.

#include <cstdint>
#include <vector>

#include "upstream/upstream.h"

namespace sluice::upstream {

// One upstream's cursor in one worker.
// Thread: worker
class RoundRobin {
 public:
  // Picks a node index among nodes of `up` whose bit in `exclude` is clear (bit i = node i;
  // only the first 64 nodes can be excluded). Nodes of weight 0 or unresolved are skipped.
  // Higher-priority groups are used first; a lower group only when no node of a higher one
  // is eligible. Returns -1 when nothing is eligible.
  int pick(const Upstream& up, uint64_t exclude = 0);

 private:
  std::vector<int64_t> current_;
};

}  // namespace sluice::upstream
