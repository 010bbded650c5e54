#pragma once
// The node-wide breaker states behind api-breaker, shared by every worker thread and every
// snapshot, without locks: one 64-bit word per key, changed by CAS.
//
// APISIX keeps three shared-dict entries per host + uri: the unhealthy count, the healthy
// count and the time of the last trip. Here they are one word:
//   bits  0..31  last trip, in seconds of the caller's clock + 1 (0: none)
//   bits 32..37  trips: how many times the unhealthy count reached a multiple of `failures`
//                (saturates at 63; the break time is capped by max_breaker_sec long before)
//   bits 38..50  the unhealthy count modulo `failures`
//   bits 51..63  the healthy count
// APISIX's unhealthy count is trips * failures + remainder, so ceil(count / failures), the
// exponent of its break time, is trips + (remainder > 0). `failures` and `successes` are at most
// kMaxCount so that both counts fit (the conf check refuses more).
//
// Keys are 64-bit fingerprints of (route or rule, conf hash, host, uri): a conf change names new
// keys, which starts from a clean state as the brief asks. Open addressing, linear probing up
// to kProbeLimit; a key that finds no slot shares one overflow slot with the others (they then
// break together: harder, never softer). Slots are not reclaimed while the process runs.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace sluice::plugins::api_breaker {

// What one conf says the breaker does; plain numbers, copied per call.
struct Rule {
  uint64_t failures = 3;
  uint64_t successes = 3;
  uint64_t max_breaker_sec = 300;
};

// A key's fingerprint; never 0.
uint64_t breaker_key(uint64_t scope, std::string_view host, std::string_view uri);

// Thread: any (lock-free)
class BreakerTable {
 public:
  static constexpr uint64_t kMaxCount = 8192;
  static constexpr size_t kProbeLimit = 32;

  explicit BreakerTable(size_t capacity);  // rounded up to a power of two

  // Whether a request for `key` at `now_s` is refused (APISIX's access phase).
  bool broken(uint64_t key, const Rule& r, uint64_t now_s);
  // The upstream answered with a status of unhealthy.http_statuses (APISIX's log phase).
  void unhealthy(uint64_t key, const Rule& r, uint64_t now_s);
  // ... with a status of healthy.http_statuses.
  void healthy(uint64_t key, const Rule& r);

  // The break time, in seconds, after `trips` trips (with a partial count: `partial`).
  static uint64_t break_seconds(uint64_t trips, bool partial, uint64_t max_breaker_sec);

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint64_t> state{0};
  };
  std::atomic<uint64_t>& state_for(uint64_t key, bool claim);

  std::unique_ptr<Slot[]> slots_;
  size_t mask_ = 0;
  alignas(64) Slot overflow_;
  std::atomic<uint64_t> none_{0};  // the state of a key not in the table (never written)
};

}  // namespace sluice::plugins::api_breaker
