#pragma once
// LeastConn: the eligible node with the lowest (active + 1) / weight, APISIX's least_conn
// score, where `active` counts this worker's tries in flight on the node. Equal scores are
// taken in turn (the scan starts after the last pick), so idle equal nodes share the load.

#include <cstdint>
#include <vector>

#include "upstream/balancer.h"

namespace sluice::upstream {

// Thread: worker
class LeastConn : public Balancer {
 public:
  int pick(const Upstream& up, const PickArgs& args) override;
  void started(const Upstream& up, int node) override;
  void finished(const Upstream& up, int node, Outcome outcome, uint64_t rtt_ms,
                uint64_t now_ms) override;
  uint32_t active(int node) const {
    return node < static_cast<int>(active_.size()) ? active_[node] : 0;
  }

 private:
  std::vector<uint32_t> active_;  // by node index
  size_t next_ = 0;               // where the next scan starts
};

}  // namespace sluice::upstream
