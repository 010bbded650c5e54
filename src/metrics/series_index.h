#pragma once
// A worker's label sets of one kind: a private hash map for lookup, and a list that a scraper
// on another thread walks. Series can be retired (plugin_attr.prometheus's `expire`): the
// worker unlinks them, and frees them once no scrape can still be reading them.
//
// Retiring, and why it is safe without a lock on the worker's side:
// - Only the owning worker links and unlinks series (`next` is atomic because a scraper reads
//   it while the worker may rewrite it; `prev` is the worker's alone).
// - A scraper brackets its walk with ReadGuard::begin()/end(), which move `gen_` to an odd
//   value and back to even (scrapes are serialized by the guard's mutex).
// - The worker unlinks with seq_cst stores, then loads `gen_` (seq_cst); the scraper makes
//   `gen_` odd with a seq_cst read-modify-write, then walks with seq_cst loads (head(),
//   next_of()). In the single order of seq_cst operations, either the worker's load comes
//   after begin() and sees the odd value (a walk may be on the unlinked series: it is kept
//   until `gen_` moves on), or it comes before, and so does the unlink, which the walk then
//   sees: it cannot reach the series. An even value means no walk can hold it: it is freed at
//   once. (On x86 only the unlink's store costs a locked instruction; no fence, which TSan
//   would not model.)
// - end()'s release store and the worker's acquire load order the scraper's last read of a
//   series before the worker's delete.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::metrics {

// What a scraper holds while it walks one worker's lists.
// Thread: any calls begin()/end() (serialized); the owning worker calls gen()
class ReadGuard {
 public:
  void begin() {
    mu_.lock();
    gen_.fetch_add(1, std::memory_order_seq_cst);  // odd: a walk is on
  }
  void end() {
    gen_.fetch_add(1, std::memory_order_release);  // even: that walk is over
    mu_.unlock();
  }
  // After the worker's unlink: the walk generation a retired series must outlive.
  uint64_t gen() const { return gen_.load(std::memory_order_seq_cst); }

 private:
  std::mutex mu_;
  std::atomic<uint64_t> gen_{0};
};

// Finds a series by its encoded label key without building a std::string, publishes new ones
// and retires old ones. S needs `std::atomic<S*> next` and `S* prev` members. A pointer
// the scraper got from head() stays valid while it holds the ReadGuard.
// Thread: the owning worker calls find()/publish()/retire()/size(); any thread calls head()
// under the guard
template <typename S>
class SeriesIndex {
 public:
  explicit SeriesIndex(const ReadGuard& guard) : guard_(guard) {}
  S* find(std::string_view key) const {
    auto it = map_.find(key);  // heterogeneous: no temporary string
    return it == map_.end() ? nullptr : it->second.get();
  }

  // Takes a series whose labels and first values are already written, and makes it visible
  // to scrapers: everything written before the release store is seen after their acquire.
  void publish(std::string_view key, std::unique_ptr<S> s) {
    S* raw = s.get();
    S* old = head_.load(std::memory_order_relaxed);
    raw->next.store(old, std::memory_order_relaxed);
    raw->prev = nullptr;
    if (old != nullptr) {
      old->prev = raw;
    }
    map_.emplace(std::string(key), std::move(s));
    head_.store(raw, std::memory_order_release);
  }

  // Unlinks the series under `key` and frees it once no scrape can hold it.
  void retire(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) {
      return;
    }
    unlink(*it->second);
    pending_.push_back({std::move(it->second), 0});
    map_.erase(it);
    settle();
  }

  // Retires every series `dead(series)` is true for.
  template <typename Dead>
  size_t retire_if(Dead dead) {
    size_t n = 0;
    for (auto it = map_.begin(); it != map_.end();) {
      if (!dead(*it->second)) {
        ++it;
        continue;
      }
      unlink(*it->second);
      pending_.push_back({std::move(it->second), 0});
      it = map_.erase(it);
      ++n;
    }
    settle();
    return n;
  }

  // The walk: head(), then next_of() until null. Thread: any, under the guard.
  const S* head() const { return head_.load(std::memory_order_seq_cst); }
  static const S* next_of(const S* s) { return s->next.load(std::memory_order_seq_cst); }
  size_t size() const { return map_.size(); }
  // Retired series not freed yet (a scrape was walking when they went).
  size_t retired() const { return pending_.size(); }

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  struct Retired {
    std::unique_ptr<S> series;
    uint64_t gen;  // 0 until settle() reads the walk generation; odd: wait until it moves
  };

  void unlink(S& s) {
    S* next = s.next.load(std::memory_order_relaxed);
    if (s.prev != nullptr) {
      s.prev->next.store(next, std::memory_order_seq_cst);
    } else {
      head_.store(next, std::memory_order_seq_cst);
    }
    if (next != nullptr) {
      next->prev = s.prev;
    }
    // `s.next` is left as it is: a scrape standing on `s` goes on to the rest of the list.
  }

  // Frees what no scrape can hold; see the comment at the top of this file.
  void settle() {
    const uint64_t gen = guard_.gen();
    size_t kept = 0;
    for (Retired& r : pending_) {
      if (r.gen == 0) {
        r.gen = gen | kStamped;  // the generation the unlink was ordered against
      }
      const uint64_t at = r.gen & ~kStamped;
      if ((at & 1) != 0 && gen == at) {
        pending_[kept++] = std::move(r);  // that walk may still be on it
      }
    }
    pending_.resize(kept);
  }

  static constexpr uint64_t kStamped = uint64_t{1} << 63;

  const ReadGuard& guard_;
  std::unordered_map<std::string, std::unique_ptr<S>, KeyHash, std::equal_to<>> map_;
  std::atomic<S*> head_{nullptr};
  std::vector<Retired> pending_;
};

}  // namespace sluice::metrics
