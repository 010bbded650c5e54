#pragma once
// Host name resolution for upstream nodes, done on the control thread so a worker never
// blocks on DNS. Answers are kept for `valid_seconds` (apisix.dns_resolver_valid); refresh()
// re-resolves expired names and says whether any answer changed, so the caller can rebuild
// the snapshot with the new addresses.

#include <cstdint>
#include <string>
#include <unordered_map>

namespace sluice::upstream {

// Thread: control
class DnsCache {
 public:
  // Resolves one name to an address text ("" when it does not resolve).
  using ResolveFn = std::string (*)(const std::string& host);

  // `resolve_fn`: getaddrinfo by default; tests give their own to change answers.
  explicit DnsCache(double valid_seconds, ResolveFn resolve_fn = &DnsCache::resolve)
      : valid_ms_(static_cast<uint64_t>(valid_seconds * 1000)), resolve_(resolve_fn) {}

  // The address text for `host` ("" when it does not resolve). IP literals pass through.
  std::string lookup(const std::string& host);
  // Re-resolves names whose answer expired. True when some answer changed.
  bool refresh();
  // Clamped to [0, ~31 years]: a config may say 1e300.
  void set_valid_seconds(double s) {
    double ms = s * 1000;
    valid_ms_ = ms <= 0 ? 0 : ms >= 1e12 ? uint64_t{1000000000000} : static_cast<uint64_t>(ms);
  }

 private:
  struct Entry {
    std::string ip;
    uint64_t expires_ms = 0;
    uint64_t last_used_ms = 0;
  };
  static std::string resolve(const std::string& host);

  uint64_t valid_ms_ = 0;
  ResolveFn resolve_;
  std::unordered_map<std::string, Entry> entries_;
};

// True when `host` is an IPv4 or IPv6 literal.
bool is_ip_literal(const std::string& host);

}  // namespace sluice::upstream
