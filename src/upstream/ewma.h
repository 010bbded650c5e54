#pragma once
// Ewma: APISIX's ewma balancer (after Finagle's PeakEwma). Each node keeps an exponentially
// weighted moving average of its response time whose memory fades with time, not with the
// number of samples: a new sample r taken td seconds after the last one gives
// ewma = ewma * exp(-td / 10) + r * (1 - exp(-td / 10)), and a node's score is its average
// decayed towards 0 up to now, so a node that went slow is tried again after a while. A pick
// takes two distinct random eligible nodes and keeps the lower score ("power of two choices");
// a node with no sample scores 0. Weights are not used, as in APISIX.

#include <cstdint>
#include <vector>

#include "upstream/balancer.h"

namespace sluice::upstream {

// Thread: worker
class Ewma : public Balancer {
 public:
  static constexpr double kDecaySeconds = 10;
  // A connect failure counts as a response this slow (at least), so the node is avoided
  // until the penalty decays. APISIX records nothing for a failed try.
  static constexpr uint64_t kConnectFailureMs = 1000;

  explicit Ewma(uint64_t seed) : rng_(seed | 1) {}
  int pick(const Upstream& up, const PickArgs& args) override;
  void finished(const Upstream& up, int node, Outcome outcome, uint64_t rtt_ms,
                uint64_t now_ms) override;
  // The node's score at `now_ms`: its average in milliseconds, decayed.
  double score(int node, uint64_t now_ms) const;

 private:
  struct Stat {
    double ewma_ms = 0;
    uint64_t touched_ms = 0;
    bool has_data = false;
  };
  uint64_t next_random();

  std::vector<Stat> stats_;  // by node index
  uint64_t rng_;
};

}  // namespace sluice::upstream
