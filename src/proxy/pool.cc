#include "proxy/pool.h"

#include <algorithm>

namespace sluice::proxy {

Pool::~Pool() { clear(); }

std::unique_ptr<UpstreamConn> Pool::take(const std::string& key) {
  auto it = idle_.find(key);
  if (it == idle_.end() || it->second.empty()) {
    return nullptr;
  }
  std::unique_ptr<UpstreamConn> c = std::move(it->second.back());
  it->second.pop_back();
  if (it->second.empty() && transient(it->first)) {
    idle_.erase(it);
  }
  forget(c->key());
  io::TimerQueue::cancel(c->idle_timer);
  c->pool = nullptr;
  return c;
}

void Pool::forget(const std::string& key) {
  // Nodes come from the configuration: their counters stay, at 0, so a busy node's
  // take/put cycle allocates nothing.
  auto n = per_node_.find(node_of(key));
  if (n != per_node_.end() && n->second > 0) {
    --n->second;
  }
}

void Pool::put(std::unique_ptr<UpstreamConn> c, uint32_t max_idle, uint32_t idle_ms) {
  if (idle_ms == 0 || max_idle == 0) {
    loop_.retire(std::move(c));
    return;
  }
  std::string_view node = node_of(c->key());
  auto n = per_node_.find(node);
  if (n != per_node_.end() && n->second >= max_idle) {
    loop_.retire(std::move(c));
    return;
  }
  if (n == per_node_.end()) {
    n = per_node_.emplace(std::string(node), 0).first;
  }
  ++n->second;
  auto& list = idle_[c->key()];
  c->owner = nullptr;
  c->pool = this;
  loop_.arm(c->idle_timer, idle_ms);
  list.push_back(std::move(c));
}

void Pool::evict(UpstreamConn* c) {
  auto it = idle_.find(c->key());
  if (it == idle_.end()) {
    return;
  }
  auto& list = it->second;
  auto pos = std::find_if(list.begin(), list.end(), [c](const auto& p) { return p.get() == c; });
  if (pos == list.end()) {
    return;
  }
  forget(c->key());
  io::TimerQueue::cancel(c->idle_timer);
  c->pool = nullptr;
  loop_.retire(std::move(*pos));
  list.erase(pos);
  if (list.empty() && transient(it->first)) {
    idle_.erase(it);
  }
}

void Pool::clear() {
  for (auto& [key, list] : idle_) {
    for (auto& c : list) {
      io::TimerQueue::cancel(c->idle_timer);
      c->pool = nullptr;
      loop_.retire(std::move(c));
    }
  }
  idle_.clear();
  per_node_.clear();
}

size_t Pool::idle_count() const {
  size_t n = 0;
  for (const auto& [key, list] : idle_) {
    n += list.size();
  }
  return n;
}

}  // namespace sluice::proxy
