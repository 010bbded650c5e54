#include "plugins/api_breaker/breaker_table.h"

#include <bit>

namespace sluice::plugins::api_breaker {
namespace {

constexpr uint64_t kTimeMask = 0xffffffffULL;
constexpr int kTripsShift = 32;
constexpr uint64_t kTripsMax = 63;
constexpr int kRemShift = 38;
constexpr int kHealthyShift = 51;
constexpr uint64_t kCountMask = 0x1fff;

struct State {
  uint64_t last = 0;  // seconds + 1, 0: none
  uint64_t trips = 0, rem = 0, healthy = 0;
};

State unpack(uint64_t w) {
  return {w & kTimeMask, (w >> kTripsShift) & kTripsMax, (w >> kRemShift) & kCountMask,
          (w >> kHealthyShift) & kCountMask};
}

uint64_t pack(const State& s) {
  return s.last | s.trips << kTripsShift | s.rem << kRemShift | s.healthy << kHealthyShift;
}

constexpr uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t mix(uint64_t h, std::string_view s) {
  // FNV-1a over the bytes, seeded by h and the length (so "ab"+"c" differs from "a"+"bc").
  h ^= s.size() * 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

uint64_t breaker_key(uint64_t scope, std::string_view host, std::string_view uri) {
  uint64_t h = fmix64(mix(mix(scope ^ 0xcbf29ce484222325ULL, host), uri));
  return h == 0 ? 1 : h;
}

BreakerTable::BreakerTable(size_t capacity) {
  const size_t n = std::bit_ceil(capacity < 2 ? size_t{2} : capacity);
  slots_ = std::make_unique<Slot[]>(n);
  mask_ = n - 1;
}

std::atomic<uint64_t>& BreakerTable::state_for(uint64_t key, bool claim) {
  for (size_t i = 0; i < kProbeLimit && i <= mask_; ++i) {
    Slot& s = slots_[(key + i) & mask_];
    uint64_t k = s.key.load(std::memory_order_acquire);
    if (k == key) {
      return s.state;
    }
    if (k == 0) {
      if (!claim) {
        return none_;  // keys are claimed in probe order: it is nowhere further
      }
      if (s.key.compare_exchange_strong(k, key, std::memory_order_acq_rel) || k == key) {
        return s.state;
      }
    }
  }
  return overflow_.state;
}

uint64_t BreakerTable::break_seconds(uint64_t trips, bool partial, uint64_t max_breaker_sec) {
  uint64_t times = trips + (partial ? 1 : 0);  // APISIX: ceil(unhealthy_count / failures)
  if (times < 1) {
    times = 1;
  }
  if (times >= 63) {
    return max_breaker_sec;
  }
  const uint64_t t = uint64_t{1} << times;
  return t > max_breaker_sec ? max_breaker_sec : t;
}

bool BreakerTable::broken(uint64_t key, const Rule& r, uint64_t now_s) {
  const State s = unpack(state_for(key, false).load(std::memory_order_acquire));
  if ((s.trips == 0 && s.rem == 0) || s.last == 0) {
    return false;
  }
  const uint64_t last = s.last - 1;
  // APISIX's last-trip entry expires after max_breaker_sec; the break never outlasts it.
  return last + break_seconds(s.trips, s.rem > 0, r.max_breaker_sec) >= now_s;
}

void BreakerTable::unhealthy(uint64_t key, const Rule& r, uint64_t now_s) {
  std::atomic<uint64_t>& word = state_for(key, true);
  uint64_t w = word.load(std::memory_order_acquire);
  for (;;) {
    State s = unpack(w);
    s.healthy = 0;  // APISIX deletes the healthy count on every unhealthy answer
    if (++s.rem >= r.failures) {
      s.rem = 0;
      s.trips = s.trips < kTripsMax ? s.trips + 1 : kTripsMax;
      s.last = now_s % kTimeMask + 1;  // 1 .. 2^32 - 1; 0 stays "none"
    }
    if (word.compare_exchange_weak(w, pack(s), std::memory_order_acq_rel)) {
      return;
    }
  }
}

void BreakerTable::healthy(uint64_t key, const Rule& r) {
  std::atomic<uint64_t>& word = state_for(key, false);
  uint64_t w = word.load(std::memory_order_acquire);
  for (;;) {
    State s = unpack(w);
    if (s.trips == 0 && s.rem == 0) {
      return;  // no unhealthy count: nothing to recover from
    }
    ++s.healthy;
    const uint64_t next = s.healthy >= r.successes ? 0 : pack(s);
    if (&word == &none_ || word.compare_exchange_weak(w, next, std::memory_order_acq_rel)) {
      return;
    }
  }
}

}  // namespace sluice::plugins::api_breaker
