#include "upstream/chash_ring.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "upstream/hash64.h"
#include "upstream/upstream.h"

namespace sluice::upstream {

ChashRing ChashRing::build(const std::vector<Node>& nodes) {
  uint64_t g = 0;
  for (const Node& n : nodes) {
    if (n.weight > 0) {
      g = std::gcd(g, static_cast<uint64_t>(n.weight));
    }
  }
  ChashRing ring;
  if (g == 0) {
    return ring;
  }
  uint64_t total = 0;
  for (const Node& n : nodes) {
    total += n.weight > 0 ? static_cast<uint64_t>(n.weight) / g * kPointsPerWeight : 0;
  }
  double scale = total > kMaxPoints ? static_cast<double>(kMaxPoints) / total : 1.0;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.weight <= 0) {
      continue;
    }
    auto points = static_cast<uint64_t>(
        static_cast<double>(static_cast<uint64_t>(n.weight) / g * kPointsPerWeight) * scale);
    uint64_t base = hash64(n.host + ":" + std::to_string(n.port));
    for (uint64_t j = 0; j < std::max<uint64_t>(points, 1); ++j) {
      ring.points_.push_back({mix64(base + (j + 1) * 0x9e3779b97f4a7c15ull), i});
    }
  }
  std::sort(ring.points_.begin(), ring.points_.end(), [](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.node < b.node;
  });
  return ring;
}

uint32_t ChashRing::find(uint64_t hash) const {
  auto it = std::lower_bound(points_.begin(), points_.end(), hash,
                             [](const Point& p, uint64_t h) { return p.hash < h; });
  return it == points_.end() ? 0 : static_cast<uint32_t>(it - points_.begin());
}

}  // namespace sluice::upstream
