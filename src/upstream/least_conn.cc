#include "upstream/least_conn.h"

namespace sluice::upstream {

int LeastConn::pick(const Upstream& up, const PickArgs& args) {
  const auto& nodes = up.nodes;
  if (active_.size() != nodes.size()) {
    active_.assign(nodes.size(), 0);
  }
  int top = 0;
  if (!top_priority(up, args.exclude, &top)) {
    return -1;
  }
  size_t count = nodes.size();
  int best = -1;
  for (size_t k = 0; k < count; ++k) {
    size_t i = (next_ + k) % count;
    if (nodes[i].priority != top || !eligible(nodes[i], i, args.exclude)) {
      continue;
    }
    // (active_i + 1) / w_i < (active_b + 1) / w_b, without division.
    if (best < 0 || (uint64_t{active_[i]} + 1) * static_cast<uint64_t>(nodes[best].weight) <
                        (uint64_t{active_[best]} + 1) * static_cast<uint64_t>(nodes[i].weight)) {
      best = static_cast<int>(i);
    }
  }
  next_ = static_cast<size_t>(best) + 1;
  return best;
}

void LeastConn::started(const Upstream& up, int node) {
  if (active_.size() != up.nodes.size()) {
    active_.assign(up.nodes.size(), 0);
  }
  ++active_[node];
}

void LeastConn::finished(const Upstream& up, int node, Outcome outcome, uint64_t rtt_ms,
                         uint64_t now_ms) {
  if (static_cast<size_t>(node) < active_.size() && active_[node] > 0) {
    --active_[node];
  }
}

}  // namespace sluice::upstream
