#pragma once
// Per-worker connection counters behind apisix_nginx_http_current_connections (nginx's
// stub_status numbers).

#include <atomic>
#include <cstdint>

namespace sluice::metrics {

// One worker's connection counts; the renderer sums every worker's.
// Thread: the owning worker calls inc()/dec(); any thread reads with load(relaxed)
struct ConnStats {
  std::atomic<uint64_t> accepted{0};  // connections accepted since start
  std::atomic<uint64_t> handled{0};   // accepted and not refused at once
  std::atomic<uint64_t> active{0};    // open now (reading + writing + waiting)
  std::atomic<uint64_t> reading{0};   // reading a request head
  std::atomic<uint64_t> writing{0};   // between a complete request head and the response's end
  std::atomic<uint64_t> waiting{0};   // idle keep-alive
  std::atomic<uint64_t> requests{0};  // client requests since start

  // Single writer, so a relaxed load and store does what fetch_add would, without the lock.
  static void inc(std::atomic<uint64_t>& a, uint64_t n = 1) {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  static void dec(std::atomic<uint64_t>& a, uint64_t n = 1) {
    a.store(a.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
};

}  // namespace sluice::metrics
