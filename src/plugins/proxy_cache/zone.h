#pragma once
// The node-wide stores behind the zones of apisix.proxy_cache: a memory zone (entries in an
// LRU bounded by memory_size) and a disk zone (one file per entry under disk_path, bounded by
// disk_size, found again after a restart), each with the fills in flight so that concurrent
// misses on one key send one request upstream (Fills).
//
// Locking: one mutex per zone, held for a hash lookup and an LRU splice (a hit) or an insert
// and its evictions; never across I/O. tests/bench/plugins_proxy_cache_bench.cc measures it.

#include <sys/types.h>

#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugins/proxy_cache/config.h"
#include "plugins/proxy_cache/entry.h"

namespace sluice::io {
class EventLoop;
}
namespace sluice::plugin {
class Host;
}

namespace sluice::plugins::proxy_cache {

// A request waiting for another's fill of its key, on its own worker.
struct Waiter {
  io::EventLoop* loop = nullptr;
  plugin::Host* host = nullptr;
  uint64_t token = 0;
};

// The keys being fetched, and who waits for each.
// Thread: any (locked)
class Fills {
 public:
  enum class Join : uint8_t { kFound, kFill, kWait };
  // Under the lock: `found()` (the store, looked at again); else joins the fill of `key` as a
  // waiter when there is one, or makes the caller its filler.
  // `waiter()` (called under the lock, only to wait) suspends the request and names it.
  template <class F, class W>
  Join join(const std::string& key, F&& found, W&& waiter) {
    std::lock_guard lock(mu_);
    if (found()) {
      return Join::kFound;
    }
    auto it = fills_.find(key);
    if (it == fills_.end()) {
      fills_.emplace(key, std::vector<Waiter>());
      return Join::kFill;
    }
    it->second.push_back(waiter());
    return Join::kWait;
  }
  // The filler is done (stored or not): its waiters, to be woken on their workers.
  std::vector<Waiter> finish(const std::string& key);
  // Wakes each waiter on its worker (`wake` is called there with it).
  static void wake_all(std::vector<Waiter> ws, void (*wake)(const Waiter&));

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<Waiter>> fills_;
};

// Thread: any (locked)
class MemoryZone {
 public:
  explicit MemoryZone(uint64_t capacity) : capacity_(capacity) {}
  // The entry stored under `key` (expired or not), made the most recently used; null if none.
  EntryPtr get(std::string_view key, uint64_t h);
  // Stores `e` (replacing its key's), evicting the least recently used entries until the zone
  // fits memory_size; false when `e` alone is bigger than the zone.
  bool put(EntryPtr e);
  bool purge(std::string_view key, uint64_t h);
  // An entry for `key` within its TTL is stored.
  bool fresh(std::string_view key, uint64_t h);
  uint64_t used() const;
  size_t count() const;
  uint64_t capacity() const { return capacity_; }

  Fills fills;

 private:
  using Lru = std::list<EntryPtr>;  // most recently used first
  void drop(std::unordered_map<uint64_t, Lru::iterator>::iterator it);

  const uint64_t capacity_;
  mutable std::mutex mu_;
  Lru lru_;
  std::unordered_map<uint64_t, Lru::iterator> index_;
  uint64_t used_ = 0;
};

}  // namespace sluice::plugins::proxy_cache
