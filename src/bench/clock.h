#pragma once
// Monotonic nanoseconds: the one clock every bench measurement and schedule uses.

#include <time.h>

#include <cstdint>

namespace sluice::bench {

inline constexpr uint64_t kNsPerSec = 1'000'000'000;

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace sluice::bench
