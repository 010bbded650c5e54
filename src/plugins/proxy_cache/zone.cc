#include "plugins/proxy_cache/zone.h"

#include "io/event_loop.h"

namespace sluice::plugins::proxy_cache {

std::vector<Waiter> Fills::finish(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = fills_.find(key);
  if (it == fills_.end()) {
    return {};
  }
  std::vector<Waiter> ws = std::move(it->second);
  fills_.erase(it);
  return ws;
}

void Fills::wake_all(std::vector<Waiter> ws, void (*wake)(const Waiter&)) {
  for (const Waiter& w : ws) {
    w.loop->post([w, wake] { wake(w); });
  }
}

EntryPtr MemoryZone::get(std::string_view key, uint64_t h) {
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  if (it == index_.end() || (*it->second)->key != key) {
    return nullptr;
  }
  if (it->second != lru_.begin()) {
    lru_.splice(lru_.begin(), lru_, it->second);
  }
  return *it->second;
}

void MemoryZone::drop(std::unordered_map<uint64_t, Lru::iterator>::iterator it) {
  used_ -= (*it->second)->cost();
  lru_.erase(it->second);
  index_.erase(it);
}

bool MemoryZone::put(EntryPtr e) {
  size_t cost = e->cost();
  if (cost > capacity_) {
    return false;
  }
  uint64_t h = key_hash(e->key);
  std::lock_guard lock(mu_);
  if (auto it = index_.find(h); it != index_.end()) {
    drop(it);
  }
  while (used_ + cost > capacity_ && !lru_.empty()) {
    drop(index_.find(key_hash(lru_.back()->key)));
  }
  lru_.push_front(std::move(e));
  index_.emplace(h, lru_.begin());
  used_ += cost;
  return true;
}

bool MemoryZone::purge(std::string_view key, uint64_t h) {
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  if (it == index_.end() || (*it->second)->key != key) {
    return false;
  }
  drop(it);
  return true;
}

bool MemoryZone::fresh(std::string_view key, uint64_t h) {
  std::lock_guard lock(mu_);
  auto it = index_.find(h);
  return it != index_.end() && (*it->second)->key == key &&
         now_s() - (*it->second)->created <= (*it->second)->ttl;
}

uint64_t MemoryZone::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

size_t MemoryZone::count() const {
  std::lock_guard lock(mu_);
  return index_.size();
}

}  // namespace sluice::plugins::proxy_cache
