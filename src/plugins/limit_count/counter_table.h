#pragma once
// The node-wide counter table behind limit-count's `local` policy: one fixed window per key,
// shared by every worker thread, exact under any interleaving, without locks or allocation on
// the request path (one probe sequence plus one 64-bit CAS loop per request).
//
// Semantics (APISIX fixed window): a key's window starts at its first request and lasts
// window_ms; at most `limit` cost units are admitted in it; the first request at or after its
// end starts the next window. Windows are not aligned to multiples of window_ms.
//
// Layout. Open addressing, power-of-two capacity, linear probing from fp & mask, at most
// kProbeLimit slots. A slot is {fp, state, wend} (32 bytes with padding, so a slot never
// straddles a cache line). Slots are claimed by CAS fp 0 -> fp and never change keys, so a
// lookup that finds its fp is done. Keys are 64-bit fingerprints (key_hash); two keys with
// the same fingerprint share a counter (probability ~n^2/2^65). When the probe limit is hit or
// the table is full the key falls back to one shared overflow slot: conservative (all such
// keys share one counter, so they are limited harder, never softer) and counted by
// overflowed(). The slots are an anonymous MAP_NORESERVE mapping: zero-filled by the kernel
// page by page on first touch, so 2^20 slots cost 32 MiB of address space but RSS only for
// pages that hold keys. Fields are plain uint64_t (implicit-lifetime, valid as zero bytes),
// always accessed through std::atomic_ref; std::atomic members would need constructing, which
// would touch every page.
//
// Words. state = (g:16 | count:48), wend = (g:16 | end_ms:48). state's generation g names the
// window the count belongs to; wend's generation names the window its end belongs to. Both
// start at zero, so a fresh slot reads "window 0 ended at time 0", i.e. expired. A request
// loads state (g, c), then wend (g', e):
//   g' == g and now >= e     window g is over: CAS state (g,c) -> (g+1, cost), then store
//                            wend = (g+1, now + window_ms). Exactly one thread wins that CAS.
//   g' == g and now < e      window g is live: in-window.
//   g' == g - 1 (mod 2^16)   a winner has started window g but not yet stored its end; we are
//                            at its very start: in-window, reset_s = the whole window.
//   otherwise (g' == g + 1)  state was read before a reset that has since completed: retry.
// In-window: reject if c + cost > limit (no write); else CAS (g,c) -> (g, c+cost), retrying
// from the top if state moved.
//
// Exactness. Every admission is a successful CAS on the one state word, and state's
// modification order is total. Window g+1 begins with the single CAS that installed
// (g+1, cost); every later admission in it is a CAS (g+1, c) -> (g+1, c+cost) with
// c + cost <= limit, and the generation cannot move on until wend says g+1 has ended. So the
// cost admitted in a window is its final count, which is <= limit: never more. A rejection is
// returned only from a consistent view (same generation and the caller's now before its end,
// or the window just started) in which the count already exceeds limit - cost, and counts
// within a generation only grow: never fewer. With cost 1, a window admits exactly
// min(limit, requests that arrive in it).
//
// wend stores are totally ordered by generation: a reset of g+1 needs wend to read g+1, i.e.
// it reads the previous winner's store, so a stalled winner can never overwrite a newer end.
// A winner that stalls between its CAS and its wend store only delays the next reset (others
// keep treating the window as just started): the window runs long, which admits less, not
// more.
//
// Generation wrap (ABA). At any instant wend's generation is state's or one behind. A thread
// can be fooled only if, between its loads and its CAS, the generation advances by exactly
// 65536 and the count returns to the same value: its stale "expired" verdict would then
// reset a live window. Each advance needs a caller's now to pass the previous end, so that
// means stalling for 65536 windows (18 hours at the 1 s minimum time_window). In-window CASes
// are immune: they re-check c + cost <= limit against the exact current word.
//
// Limits. count is 48 bits: admission stops at 2^48 - 1 per window even if limit is higher
// (at 10^8 requests/s that is a month inside one window); `remaining` is still computed
// against the real limit. now_ms + window_ms must stay below 2^48 ms (about 8900 years of
// CLOCK_REALTIME ms; far beyond for CLOCK_MONOTONIC). window_ms must be > 0.
//
// Memory order. fp: relaxed; it publishes nothing (state and wend are zero before the table
// is shared and are only ever touched atomically). state/wend loads: acquire; the reset CAS:
// acq_rel; the wend store: release. These make "wend is at most one generation behind the
// state we read" hold (the winner read wend before its release CAS, and our acquire load of
// state synchronizes with it through the release sequence of later RMWs). In-window CASes are
// relaxed: they carry no data, and as RMWs they continue the reset's release sequence. On
// x86 all of these compile to the same instructions; on Arm the increment avoids the barriers.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::plugins::limit_count {

// A 64-bit fingerprint of (route id, plugin conf hash, key value); never 0. Each string is
// folded in with its length, 8 bytes per 64x64->128-bit multiply (high half xor low half), and
// Murmur3's fmix64 finalizer spreads the result over the low bits that pick the slot. It is
// not seeded: a client who picks key values could aim them at one probe chain, which at worst
// sends keys to the shared overflow slot (limited harder, never softer).
uint64_t key_hash(std::string_view route_id, uint64_t conf_hash, std::string_view key);

// Node-wide fixed-window counters for limit-count's `local` policy (see the file comment).
// Thread: any (lock-free)
class CounterTable {
 public:
  struct Result {
    bool allowed;
    uint64_t remaining;  // limit - count after an admitted request; 0 when rejected
    uint64_t reset_s;    // seconds to the window's end, rounded up
  };

  static constexpr size_t kProbeLimit = 64;
  static constexpr uint64_t kMaxCount = (uint64_t{1} << 48) - 1;

  // capacity is rounded up to a power of two. If the mapping cannot be made, capacity() is 0
  // and every key shares the overflow slot (conservative, never fails a request).
  explicit CounterTable(size_t capacity);
  ~CounterTable();
  CounterTable(const CounterTable&) = delete;
  CounterTable& operator=(const CounterTable&) = delete;

  // One request of weight `cost` for key `fp` (from key_hash) at the caller's clock now_ms.
  Result incoming(uint64_t fp, uint64_t limit, uint64_t window_ms, uint64_t now_ms,
                  uint64_t cost = 1);

  size_t capacity() const { return capacity_; }
  // Slots claimed by a key.
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  // Requests that found no slot of their own and used the shared overflow slot.
  uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  struct alignas(32) Slot {
    uint64_t fp;
    uint64_t state;
    uint64_t wend;
  };

  Slot& slot_for(uint64_t fp);
  static Result count(Slot& slot, uint64_t limit, uint64_t window_ms, uint64_t now_ms,
                      uint64_t cost);

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t probes_ = 0;
  std::atomic<size_t> used_{0};
  alignas(64) std::atomic<uint64_t> overflowed_{0};
  alignas(64) Slot overflow_{};
};

}  // namespace sluice::plugins::limit_count
