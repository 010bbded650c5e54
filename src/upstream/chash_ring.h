#pragma once
// ChashRing: the consistent-hash ring of a chash upstream, built once per snapshot and shared
// by every worker.

#include <cstdint>
#include <vector>

namespace sluice::upstream {

struct Node;

// Each node owns points in proportion to its weight (kPointsPerWeight per unit of weight,
// after dividing all weights by their greatest common divisor). A point's position is derived
// from the node's "host:port" and the point's number, never from the node's position in the
// list, so adding or removing one node of N moves about 1/N of the keys.
// Thread: any (immutable)
class ChashRing {
 public:
  static constexpr uint32_t kPointsPerWeight = 160;
  static constexpr uint32_t kMaxPoints = 1u << 18;  // weights are scaled down past this

  static ChashRing build(const std::vector<Node>& nodes);

  // The index of the first point at or after `hash`, wrapping; 0 when the ring is empty.
  uint32_t find(uint64_t hash) const;
  uint32_t size() const { return static_cast<uint32_t>(points_.size()); }
  // The node that owns point `i`.
  uint32_t node_at(uint32_t i) const { return points_[i].node; }

 private:
  struct Point {
    uint64_t hash;
    uint32_t node;
  };
  std::vector<Point> points_;  // sorted by hash
};

}  // namespace sluice::upstream
