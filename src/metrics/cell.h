#pragma once
// Metric cells: values one worker writes and a scraper reads, with no locked instruction.
//
// Only the owning worker writes a cell, so an add is a relaxed load plus a relaxed store rather
// than a fetch_add: the same result without the bus lock, and still race-free for TSan because
// every access is atomic. A scraper on another thread reads with a relaxed load and may see a
// value a few adds old, which a scrape tolerates.

#include <atomic>
#include <bit>
#include <cstdint>

namespace sluice::metrics {

// A monotonically growing integer (a counter, or a histogram bucket).
// Thread: the owning worker calls add(); any thread calls value()
class Counter {
 public:
  void add(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// A running sum of doubles, kept as bits in an integer atomic.
// Thread: the owning worker calls add(); any thread calls value()
class DoubleSum {
 public:
  void add(double x) {
    const double now = std::bit_cast<double>(bits_.load(std::memory_order_relaxed));
    bits_.store(std::bit_cast<uint64_t>(now + x), std::memory_order_relaxed);
  }
  double value() const { return std::bit_cast<double>(bits_.load(std::memory_order_relaxed)); }

 private:
  std::atomic<uint64_t> bits_{0};  // the bits of 0.0
};

}  // namespace sluice::metrics
