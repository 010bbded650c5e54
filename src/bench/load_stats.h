#pragma once
// What one load thread measured; merged across threads when the run ends.

#include <cstdint>

#include "bench/histogram.h"

namespace sluice::bench {

enum class LoadError : uint8_t { kConnect, kRead, kWrite, kTimeout, kParse };
inline constexpr int kNumLoadErrors = 5;

// Thread: worker (read by the control thread after the worker has joined)
struct LoadStats {
  Histogram latency;      // ns, from send (closed loop) or intended send (open loop)
  uint64_t requests = 0;  // completed responses
  uint64_t sent = 0;
  uint64_t unsent = 0;  // open loop: scheduled before the end but never sent
  uint64_t bytes_read = 0;
  uint64_t status[5] = {};  // 1xx..5xx
  uint64_t errors[kNumLoadErrors] = {};
  uint64_t finished_ns = 0;  // when this thread stopped (monotonic)

  void count_status(int status) {
    if (status >= 100 && status <= 599) {
      ++this->status[status / 100 - 1];
    }
  }
  void count_error(LoadError e) { ++errors[static_cast<int>(e)]; }
  uint64_t error(LoadError e) const { return errors[static_cast<int>(e)]; }

  void merge(const LoadStats& o) {
    latency.merge(o.latency);
    requests += o.requests;
    sent += o.sent;
    unsent += o.unsent;
    bytes_read += o.bytes_read;
    for (int i = 0; i < 5; ++i) {
      status[i] += o.status[i];
    }
    for (int i = 0; i < kNumLoadErrors; ++i) {
      errors[i] += o.errors[i];
    }
    finished_ns = finished_ns > o.finished_ns ? finished_ns : o.finished_ns;
  }
};

}  // namespace sluice::bench
