#pragma once
// Lines the load threads up: each arrives once its connections are up, and all start the
// clock together, so no thread's schedule begins while another is still connecting.

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "bench/clock.h"

namespace sluice::bench {

// Thread: any
class StartGate {
 public:
  explicit StartGate(int parties) : waiting_(parties) {}

  // Blocks until every party has arrived; returns the common start time t0.
  uint64_t arrive_and_wait() {
    std::unique_lock lock(mu_);
    if (--waiting_ == 0) {
      t0_ = now_ns();
      cv_.notify_all();
    } else {
      cv_.wait(lock, [this] { return waiting_ == 0; });
    }
    return t0_;
  }
  uint64_t t0() const {
    std::lock_guard lock(mu_);
    return t0_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int waiting_;
  uint64_t t0_ = 0;
};

}  // namespace sluice::bench
