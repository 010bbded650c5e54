#pragma once
// Balancer: picks the node of an upstream for one try of a request. One balancer per upstream
// per worker, made by make_balancer() for the upstream's `type`:
//   roundrobin  smooth weighted round-robin (round_robin below)
//   chash       consistent hashing on the request's key (chash_balancer.h)
//   least_conn  fewest active requests relative to weight (least_conn.h)
//   ewma        lowest latency average, the better of two random nodes (ewma.h)
// Every balancer skips nodes of weight 0, unresolved nodes and nodes whose bit is set in the
// exclude mask (bit i = node i, the first 64 nodes only), uses the highest priority group
// that has an eligible node, and returns -1 when nothing is eligible.

#include <cstdint>
#include <memory>
#include <vector>

#include "upstream/upstream.h"

namespace sluice::upstream {

// What a pick may look at besides the upstream.
struct PickArgs {
  uint64_t exclude = 0;  // nodes already tried
  uint64_t hash = 0;     // the request key's hash (chash only)
  uint64_t now_ms = 0;   // monotonic milliseconds (ewma only)
};

// How a try that started on a node ended.
enum class Outcome : uint8_t {
  kOk,             // the response was relayed whole
  kFailed,         // connected, then failed or was abandoned (timeout, reset, client gone)
  kConnectFailed,  // the node could not be reached
};

// Thread: worker
class Balancer {
 public:
  virtual ~Balancer() = default;
  virtual int pick(const Upstream& up, const PickArgs& args) = 0;
  // A try on `node` began / ended (`rtt_ms` after it began). Balancers that keep no per-node
  // state ignore them.
  virtual void started(const Upstream& up, int node) {}
  virtual void finished(const Upstream& up, int node, Outcome outcome, uint64_t rtt_ms,
                        uint64_t now_ms) {}
};

// `seed` varies the random choices of ewma between workers.
std::unique_ptr<Balancer> make_balancer(const Upstream& up, uint64_t seed);

// Whether node i may be picked under `exclude`.
inline bool eligible(const Node& n, size_t i, uint64_t exclude) {
  if (n.weight <= 0 || !n.resolved) {
    return false;
  }
  return i >= 64 || (exclude & (uint64_t{1} << i)) == 0;
}

// The highest priority among eligible nodes; false when none is eligible.
bool top_priority(const Upstream& up, uint64_t exclude, int* top);

// Smooth weighted round-robin (the nginx algorithm): each pick adds every node's weight to its
// current value, takes the largest, and subtracts the total from it. Weights 5,1,1 give
// a a b a c a a — heavy nodes interleaved, never bunched.
// Thread: worker
class RoundRobin : public Balancer {
 public:
  int pick(const Upstream& up, uint64_t exclude = 0);
  int pick(const Upstream& up, const PickArgs& args) override { return pick(up, args.exclude); }

 private:
  std::vector<int64_t> current_;
};

}  // namespace sluice::upstream
