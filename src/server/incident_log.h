#pragma once
// Failures reported once per incident. Under a storm (an upstream down, thousands of requests a
// second) one line per request would bury everything else in the log and cost more than the
// requests: the first failure of a kind is reported at once, repeats of the same kind within
// the window are only counted, and the count goes out with the next report after it.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::server {

// Thread: worker (one per worker)
class IncidentLog {
 public:
  static constexpr uint64_t kNotNow = UINT64_MAX;

  explicit IncidentLog(uint64_t window_ms = 10000, size_t max_kinds = 4096)
      : window_ms_(window_ms), max_kinds_(max_kinds) {}

  // A failure of kind `key` at `now_ms`: kNotNow when it is a repeat to be counted only, else
  // how many repeats were counted since the kind's last report (0 for a new kind).
  uint64_t admit(std::string_view key, uint64_t now_ms);

 private:
  struct Kind {
    uint64_t reported_ms = 0;
    uint64_t repeats = 0;
  };
  uint64_t window_ms_;
  size_t max_kinds_;
  std::unordered_map<std::string, Kind> kinds_;
};

}  // namespace sluice::server
