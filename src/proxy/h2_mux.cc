#include "proxy/h2_mux.h"

#include <algorithm>

#include "proxy/h2_client.h"

namespace sluice::proxy {

void H2Shared::on_upstream_event() {
  // A copy: a try told may end (and leave) at once.
  std::vector<UpstreamOwner*> told = owners;
  for (UpstreamOwner* o : told) {
    if (std::find(owners.begin(), owners.end(), o) != owners.end()) {
      o->on_upstream_event();
    }
  }
}

H2Mux::~H2Mux() {
  for (auto& [key, list] : busy_) {
    for (auto& s : list) {
      s->conn->owner = nullptr;
    }
  }
}

H2Shared* H2Mux::find(const std::string& key) {
  auto it = busy_.find(key);
  if (it == busy_.end()) {
    return nullptr;
  }
  for (auto& s : it->second) {
    UpstreamConn& c = *s->conn;
    if (!c.ready() || !c.h2->usable()) {
      continue;  // still connecting, or going away: not for a new stream
    }
    uint32_t room = std::min<uint32_t>(
        kMaxStreams,
        nghttp2_session_get_remote_settings(c.h2->ng(), NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
    if (s->owners.size() < room) {
      return s.get();
    }
  }
  return nullptr;
}

H2Shared* H2Mux::add(const std::string& key, std::unique_ptr<UpstreamConn> c) {
  auto s = std::make_unique<H2Shared>();
  c->owner = s.get();
  s->conn = std::move(c);
  H2Shared* raw = s.get();
  busy_[key].push_back(std::move(s));
  return raw;
}

void H2Mux::detach(H2Shared* s, UpstreamOwner* owner, bool keep, uint32_t pool_size,
                   uint32_t pool_idle_ms) {
  auto pos = std::find(s->owners.begin(), s->owners.end(), owner);
  if (pos != s->owners.end()) {
    s->owners.erase(pos);
  }
  if (!s->owners.empty()) {
    return;  // other streams go on (a broken connection: they find out themselves)
  }
  std::unique_ptr<UpstreamConn> c = std::move(s->conn);
  std::string key = c->key();
  c->owner = nullptr;
  if (keep) {
    pool_.put(std::move(c), pool_size, pool_idle_ms);
  } else {
    loop_.retire(std::move(c));
  }
  auto it = busy_.find(key);
  if (it == busy_.end()) {
    return;
  }
  auto& list = it->second;
  auto found = std::find_if(list.begin(), list.end(), [s](const auto& p) { return p.get() == s; });
  if (found != list.end()) {
    loop_.retire(std::move(*found));  // destroyed after this batch, not under our callers
    list.erase(found);
  }
  if (list.empty()) {
    busy_.erase(it);
  }
}

size_t H2Mux::busy_count() const {
  size_t n = 0;
  for (const auto& [key, list] : busy_) {
    n += list.size();
  }
  return n;
}

}  // namespace sluice::proxy
