#pragma once
// A worker's label sets of one kind: a private hash map for lookup, and an append-only list
// that a scraper on another thread walks.

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace sluice::metrics {

// Finds a series by its encoded label key without building a std::string, and publishes new
// ones. S needs a `const S* next` member. Series live until the index dies, so a pointer the
// scraper got from head() stays valid while the owner is alive.
// Thread: the owning worker calls find()/publish()/size(); any thread calls head()
template <typename S>
class SeriesIndex {
 public:
  S* find(std::string_view key) const {
    auto it = map_.find(key);  // heterogeneous: no temporary string
    return it == map_.end() ? nullptr : it->second.get();
  }

  // Takes a series whose labels and first values are already written, and makes it visible
  // to scrapers: everything written before the release store is seen after their acquire.
  void publish(std::string_view key, std::unique_ptr<S> s) {
    S* raw = s.get();
    raw->next = head_.load(std::memory_order_relaxed);
    map_.emplace(std::string(key), std::move(s));
    head_.store(raw, std::memory_order_release);
  }

  const S* head() const { return head_.load(std::memory_order_acquire); }
  size_t size() const { return map_.size(); }

 private:
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };

  std::unordered_map<std::string, std::unique_ptr<S>, KeyHash, std::equal_to<>> map_;
  std::atomic<S*> head_{nullptr};
};

}  // namespace sluice::metrics
