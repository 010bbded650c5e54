#pragma once
// Upstreams for balancer tests: nodes named 10.0.0.<i>:80, resolved, with given weights and
// priorities.

#include <string>
#include <utility>
#include <vector>

#include "upstream/upstream.h"

namespace sluice::upstream::testing {

inline Node test_node(const std::string& host, int weight, int priority = 0) {
  Node n;
  n.host = host;
  n.port = 80;
  n.weight = weight;
  n.priority = priority;
  n.resolved = true;
  return n;
}

inline Upstream upstream_of(BalancerType type, std::vector<std::pair<int, int>> weight_priority) {
  Upstream up;
  up.type = type;
  for (size_t i = 0; i < weight_priority.size(); ++i) {
    auto [w, p] = weight_priority[i];
    up.nodes.push_back(test_node("10.0.0." + std::to_string(i + 1), w, p));
  }
  if (type == BalancerType::kChash) {
    up.ring = ChashRing::build(up.nodes);
  }
  return up;
}

}  // namespace sluice::upstream::testing
