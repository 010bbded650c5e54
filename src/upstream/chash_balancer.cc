#include "upstream/chash_balancer.h"

namespace sluice::upstream {

int ChashBalancer::pick(const Upstream& up, const PickArgs& args) {
  int top = 0;
  uint32_t size = up.ring.size();
  if (size == 0 || !top_priority(up, args.exclude, &top)) {
    return -1;
  }
  uint32_t at = up.ring.find(args.hash);
  for (uint32_t step = 0; step < size; ++step, at = at + 1 == size ? 0 : at + 1) {
    uint32_t node = up.ring.node_at(at);
    const Node& n = up.nodes[node];
    if (n.priority == top && eligible(n, node, args.exclude)) {
      return static_cast<int>(node);
    }
  }
  return -1;
}

}  // namespace sluice::upstream
