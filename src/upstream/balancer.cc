#include "upstream/balancer.h"

#include <limits>

namespace sluice::upstream {

namespace {
bool eligible(const Node& n, size_t i, uint64_t exclude) {
  if (n.weight <= 0 || !n.resolved) {
    return false;
  }
  return i >= 64 || (exclude & (uint64_t{1} << i)) == 0;
}
}  // namespace

int RoundRobin::pick(const Upstream& up, uint64_t exclude) {
  const auto& nodes = up.nodes;
  if (current_.size() != nodes.size()) {
    current_.assign(nodes.size(), 0);
  }
  // The highest priority that still has an eligible node.
  bool found = false;
  int top = std::numeric_limits<int>::min();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (eligible(nodes[i], i, exclude) && (!found || nodes[i].priority > top)) {
      top = nodes[i].priority;
      found = true;
    }
  }
  if (!found) {
    return -1;
  }
  int64_t total = 0;
  int best = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!eligible(nodes[i], i, exclude) || nodes[i].priority != top) {
      continue;
    }
    current_[i] += nodes[i].weight;
    total += nodes[i].weight;
    if (best < 0 || current_[i] > current_[best]) {
      best = static_cast<int>(i);
    }
  }
  current_[best] -= total;
  return best;
}

}  // namespace sluice::upstream
