#include "plugins/limit_count/counter_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace sluice::plugins::limit_count {
namespace {

constexpr uint64_t kLow48 = CounterTable::kMaxCount;
constexpr uint64_t kGenMask = 0xffff;

// Murmur3's 64-bit finalizer: a bijection whose every output bit depends on every input bit.
constexpr uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// One folded multiply per 8 input bytes: the 128-bit product of (h ^ w) and an odd constant,
// high half xor low half. Unlike a 64-bit multiply, which only carries a difference upwards
// (so two words differing in their top bytes can cancel), the high half spreads a difference
// in any input bit over the whole result. fmix64 runs once at the end.
uint64_t step(uint64_t h, uint64_t w) {
  const unsigned __int128 p = static_cast<unsigned __int128>(h ^ w) * 0x9e3779b97f4a7c15ULL;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

uint64_t load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

uint64_t load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// The last 1..8 bytes as one word, from overlapping fixed-size loads: given n, every byte
// lands somewhere, and no byte loop or variable-length copy is needed.
uint64_t tail_word(const char* p, size_t n) {
  if (n >= 4) {
    return load32(p) | load32(p + n - 4) << 32;
  }
  const auto byte = [p](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
  return byte(0) << 16 | byte(n / 2) << 8 | byte(n - 1);
}

// The length goes in first, so ("ab","c") and ("a","bc") differ.
uint64_t mix_bytes(uint64_t h, std::string_view s) {
  const char* p = s.data();
  size_t n = s.size();
  h = step(h, n);
  for (; n > 8; n -= 8, p += 8) {
    h = step(h, load64(p));
  }
  return n == 0 ? h : step(h, tail_word(p, n));
}

constexpr uint64_t pack(uint64_t gen, uint64_t low) { return (gen & kGenMask) << 48 | low; }
constexpr uint64_t gen_of(uint64_t word) { return word >> 48; }
constexpr uint64_t low_of(uint64_t word) { return word & kLow48; }
constexpr uint64_t ceil_s(uint64_t ms) { return ms / 1000 + (ms % 1000 != 0); }

}  // namespace

uint64_t key_hash(std::string_view route_id, uint64_t conf_hash, std::string_view key) {
  uint64_t h = mix_bytes(0x243f6a8885a308d3ULL, route_id);
  h = mix_bytes(step(h, conf_hash), key);
  h = fmix64(h);
  return h == 0 ? 1 : h;
}

CounterTable::CounterTable(size_t capacity) {
  if (capacity == 0) {
    return;
  }
  // Beyond 2^40 slots (32 TiB) the caller is confused; keep the size arithmetic safe.
  const size_t n = std::bit_ceil(std::min(capacity, size_t{1} << 40));
  // Anonymous memory is zero-filled lazily by the kernel: untouched pages cost no RSS.
  void* p = mmap(nullptr, n * sizeof(Slot), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return;
  }
  slots_ = static_cast<Slot*>(p);
  capacity_ = n;
  mask_ = n - 1;
  probes_ = std::min(n, kProbeLimit);
}

CounterTable::~CounterTable() {
  if (slots_ != nullptr) {
    munmap(slots_, capacity_ * sizeof(Slot));
  }
}

CounterTable::Slot& CounterTable::slot_for(uint64_t fp) {
  for (size_t i = 0; i < probes_; ++i) {
    Slot& s = slots_[(fp + i) & mask_];
    std::atomic_ref<uint64_t> slot_fp(s.fp);
    uint64_t seen = slot_fp.load(std::memory_order_relaxed);
    if (seen == 0 && slot_fp.compare_exchange_strong(seen, fp, std::memory_order_relaxed)) {
      used_.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    // Either it held a key, or another thread claimed it first (`seen` now says for whom).
    if (seen == fp) {
      return s;
    }
  }
  overflowed_.fetch_add(1, std::memory_order_relaxed);
  return overflow_;
}

CounterTable::Result CounterTable::incoming(uint64_t fp, uint64_t limit, uint64_t window_ms,
                                            uint64_t now_ms, uint64_t cost) {
  return count(slot_for(fp), limit, window_ms, now_ms, cost);
}

// The CAS loop argued in the header. Returns from inside the loop; loops only when the state
// word moved under us or wend showed a reset newer than the state we read.
CounterTable::Result CounterTable::count(Slot& slot, uint64_t limit, uint64_t window_ms,
                                         uint64_t now_ms, uint64_t cost) {
  std::atomic_ref<uint64_t> state(slot.state);
  std::atomic_ref<uint64_t> wend(slot.wend);
  const uint64_t cap = std::min(limit, kMaxCount);
  const uint64_t window_s = ceil_s(window_ms);
  for (;;) {
    uint64_t st = state.load(std::memory_order_acquire);
    const uint64_t we = wend.load(std::memory_order_acquire);
    const uint64_t g = gen_of(st);
    const uint64_t c = low_of(st);
    uint64_t reset_s = window_s;
    if (gen_of(we) == g) {
      if (now_ms >= low_of(we)) {
        // Window g is over: the one thread whose CAS lands starts g+1. A cost above the
        // limit is refused but still starts the window, empty.
        const bool fits = cost <= cap;
        if (!state.compare_exchange_weak(st, pack(g + 1, fits ? cost : 0),
                                         std::memory_order_acq_rel, std::memory_order_relaxed)) {
          continue;
        }
        wend.store(pack(g + 1, std::min(now_ms + window_ms, kLow48)), std::memory_order_release);
        return {fits, fits ? limit - cost : 0, window_s};
      }
      reset_s = ceil_s(low_of(we) - now_ms);
    } else if (gen_of(we) != ((g - 1) & kGenMask)) {
      continue;  // wend is ahead: `st` predates a finished reset
    }
    if (c > cap || cost > cap - c) {
      return {false, 0, reset_s};
    }
    if (state.compare_exchange_weak(st, pack(g, c + cost), std::memory_order_relaxed,
                                    std::memory_order_relaxed)) {
      return {true, limit - c - cost, reset_s};
    }
  }
}

}  // namespace sluice::plugins::limit_count
