#pragma once
// Client connection counters that span workers: the process-wide cap and one per listen
// address. Plain relaxed atomics, touched once per accept and once per close, never per
// request; a cap may be overshot by at most one connection per worker racing on it.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::server {

// Thread: any
struct ConnCounter {
  explicit ConnCounter(uint32_t max) : max(max) {}
  const uint32_t max;  // 0 = no cap
  std::atomic<uint32_t> open{0};
  bool full() const { return max != 0 && open.load(std::memory_order_relaxed) >= max; }
};

// Thread: any
struct ConnLimits {
  ConnCounter total{0};
  std::vector<std::unique_ptr<ConnCounter>> listeners;  // by node_listen position
  explicit ConnLimits(uint32_t max_total) : total(max_total) {}
};

}  // namespace sluice::server
