#pragma once
// A node-wide table of one 64-bit word per key, shared by every worker thread, for the limit
// plugins whose state per key fits a word: limit-req's bucket (the time it drains empty) and
// limit-conn's count of requests in flight. The caller updates the word with its own CAS loop
// (std::atomic_ref), so each decision is one atomic step on one word: exact under any
// interleaving, without locks or allocation.
//
// Layout as CounterTable's (counter_table.h): open addressing over an anonymous
// MAP_NORESERVE mapping (RSS only for pages that hold keys), power-of-two capacity, linear
// probing of at most kProbeLimit slots, slots claimed by CAS fp 0 -> fp and never reclaimed.
// Keys that find no slot share one overflow word: limited harder, never softer. Fingerprints
// come from key_hash (counter_table.h).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "plugin/info.h"

namespace sluice::plugins::limit_count {

// Thread: any (lock-free)
class WordTable {
 public:
  static constexpr size_t kProbeLimit = 64;

  explicit WordTable(size_t capacity);
  ~WordTable();
  WordTable(const WordTable&) = delete;
  WordTable& operator=(const WordTable&) = delete;

  // The word of key `fp` (zero for a new key). Its address is stable for the table's life,
  // so a request may keep it from one phase to another.
  uint64_t* word(uint64_t fp);

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  struct alignas(16) Slot {
    uint64_t fp;
    uint64_t word;
  };

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t mask_ = 0;
  size_t probes_ = 0;
  std::atomic<size_t> used_{0};
  alignas(64) std::atomic<uint64_t> overflowed_{0};
  alignas(64) uint64_t overflow_ = 0;
};

// What the limit plugins (limit-count, limit-req, limit-conn) share when they build.
// FNV-1a: stable across processes, so two nodes sharing a Redis name a conf alike.
uint64_t stable_hash(std::string_view s);
// The state's scope: the owner and a hash of the conf, so that a conf change starts anew
// (APISIX keys the state by the plugin conf's version).
std::string conf_scope(std::string_view owner, const plugin::Json& conf);
// Plugin `name`'s node-wide table (plugin_attr.<name>.local_keys slots, 2^20 by default),
// made once and kept across snapshots.
std::shared_ptr<WordTable> local_table(plugin::Shared& shared, const std::string& name);

}  // namespace sluice::plugins::limit_count
