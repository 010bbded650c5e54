#include "upstream/balancer.h"

#include "upstream/chash_balancer.h"
#include "upstream/ewma.h"
#include "upstream/least_conn.h"

namespace sluice::upstream {

std::unique_ptr<Balancer> make_balancer(const Upstream& up, uint64_t seed) {
  switch (up.type) {
    case BalancerType::kChash:
      return std::make_unique<ChashBalancer>();
    case BalancerType::kLeastConn:
      return std::make_unique<LeastConn>();
    case BalancerType::kEwma:
      return std::make_unique<Ewma>(seed);
    case BalancerType::kRoundRobin:
      break;
  }
  return std::make_unique<RoundRobin>();
}

bool top_priority(const Upstream& up, uint64_t exclude, int* top) {
  bool found = false;
  for (size_t i = 0; i < up.nodes.size(); ++i) {
    if (eligible(up.nodes[i], i, exclude) && (!found || up.nodes[i].priority > *top)) {
      *top = up.nodes[i].priority;
      found = true;
    }
  }
  return found;
}

int RoundRobin::pick(const Upstream& up, uint64_t exclude) {
  const auto& nodes = up.nodes;
  if (current_.size() != nodes.size()) {
    current_.assign(nodes.size(), 0);
  }
  int top = 0;
  if (!top_priority(up, exclude, &top)) {
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
