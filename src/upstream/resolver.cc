#include "upstream/resolver.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>

#include "common/log.h"
#include "io/event_loop.h"
#include "io/socket.h"

namespace sluice::upstream {

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string DnsCache::resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    SLUICE_LOG(kError, "failed to resolve upstream host {}: {}", host, gai_strerror(rc));
    return {};
  }
  // Prefer IPv4, as most upstream pools are IPv4-only.
  const addrinfo* pick = res;
  for (const addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  io::SockAddr sa;
  std::memcpy(&sa.storage, pick->ai_addr, pick->ai_addrlen);
  sa.len = pick->ai_addrlen;
  freeaddrinfo(res);
  return sa.ip_text();
}

std::string DnsCache::lookup(const std::string& host) {
  if (is_ip_literal(host)) {
    return host;
  }
  uint64_t now = io::monotonic_ms();
  auto it = entries_.find(host);
  if (it != entries_.end() && it->second.expires_ms > now) {
    it->second.last_used_ms = now;
    return it->second.ip;
  }
  Entry e{resolve_(host), now + valid_ms_, now};
  entries_[host] = e;
  return e.ip;
}

bool DnsCache::refresh() {
  uint64_t now = io::monotonic_ms();
  bool changed = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    if (e.expires_ms > now) {
      ++it;
      continue;
    }
    // Names no snapshot used for a long while are dropped instead of re-resolved.
    if (now - e.last_used_ms > 10 * valid_ms_ + 60000) {
      it = entries_.erase(it);
      continue;
    }
    std::string ip = resolve_(it->first);
    if (ip != e.ip) {
      SLUICE_LOG(kNotice, "upstream host {} now resolves to {} (was {})", it->first,
                 ip.empty() ? "nothing" : ip, e.ip.empty() ? "nothing" : e.ip);
      e.ip = ip;
      changed = true;
    }
    e.expires_ms = now + valid_ms_;
    ++it;
  }
  return changed;
}

}  // namespace sluice::upstream
