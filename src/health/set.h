#pragma once
// The health of one checked upstream's nodes, shared by every worker (which read it on each
// pick and report what real traffic saw) and the active checker (which probes the nodes).
// Lock-free: a node's state is a few atomics; the balancer reads one packed mask per pick.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "health/checks.h"
#include "io/socket.h"

namespace sluice::health {

// One node as the health checker sees it.
// Thread: any (value type)
struct Target {
  std::string ip;  // textual IP (metrics label, logs)
  uint16_t port = 0;
  io::SockAddr addr;  // the node's address
  // The Host a probe sends when active.host is empty (the host part is also an https probe's
  // server name): the node's, or the upstream's upstream_host under pass_host: rewrite.
  std::string host_header;
  bool pickable = true;  // resolved and weight > 0: the balancer may choose it
  std::string key() const { return ip + ":" + std::to_string(port); }
};

enum class Failure : uint8_t { kHttp, kTcp, kTimeout };

// Thread: any (the configuration is immutable; the per-node state is atomic)
class Set {
 public:
  // `name` is the upstream's resource key (`/apisix/upstreams/1`, `/apisix/routes/1`).
  Set(std::string name, std::shared_ptr<const Checks> checks, std::vector<Target> targets);
  Set(const Set&) = delete;
  Set& operator=(const Set&) = delete;

  const std::string& name() const { return name_; }
  const Checks& checks() const { return *checks_; }
  const std::vector<Target>& targets() const { return targets_; }
  size_t size() const { return targets_.size(); }
  bool healthy(size_t node) const {
    return nodes_[node].healthy.load(std::memory_order_relaxed) != 0;
  }

  // The nodes a balancer must skip (bit i = node i, first 64 nodes): the unhealthy ones, or
  // none when no pickable node is healthy: APISIX then balances across all of them.
  uint64_t exclude_mask() const {
    uint64_t down = down_mask_.load(std::memory_order_acquire);
    return (down & pickable_) == pickable_ ? 0 : down;
  }

  // Passive checks (workers): what a real exchange with `node` saw. No-ops without passive.
  void report_status(int node, int status);
  void report_failure(int node, Failure kind);

  // Active checks (the checker thread): one probe's outcome.
  void probe_success(size_t node);
  void probe_failure(size_t node, Failure kind);
  // A probe answered with a status in neither list: it counts for nothing.

  // Copies the health of nodes at the same address from `older` (a rebuilt upstream whose
  // node list changed keeps what it knew of the nodes that stayed).
  void inherit(const Set& older);

 private:
  // Thread: any
  struct NodeState {
    std::atomic<uint8_t> healthy{1};
    std::atomic<uint32_t> successes{0};
    std::atomic<uint32_t> http_failures{0};
    std::atomic<uint32_t> tcp_failures{0};
    std::atomic<uint32_t> timeouts{0};
  };

  void count_failure(size_t node, Failure kind, int threshold, const char* source);
  void clear_failures(NodeState& n);
  // Flips the node's flag; the one thread that flips it updates the mask and logs.
  void set_healthy(size_t node, bool up, const char* why);
  void sync_mask_bit(size_t node);

  std::string name_;
  std::shared_ptr<const Checks> checks_;
  std::vector<Target> targets_;
  std::unique_ptr<NodeState[]> nodes_;
  uint64_t pickable_ = 0;
  std::atomic<uint64_t> down_mask_{0};
};

using SetPtr = std::shared_ptr<Set>;

}  // namespace sluice::health
