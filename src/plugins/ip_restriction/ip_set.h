#pragma once
// IpSet: a set of IPv4 and IPv6 blocks that answers "is this address in one of them" in time
// that does not grow with the number of blocks: one hash table keyed by (prefix length,
// masked address), probed once per distinct prefix length the set holds (at most 33 for IPv4,
// 129 for IPv6; a list of 10,000 /32s and /24s costs two probes).

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "router/ip.h"

namespace sluice::plugins::ip_restriction {

// Thread: any (immutable once built; built on the control thread)
class IpSet {
 public:
  void add(const router::Cidr& block);
  bool contains(const router::IpAddr& ip) const;
  size_t size() const { return keys_.size(); }

 private:
  // An address as two 64-bit halves (IPv4 in the low 32 bits of `lo`), masked to `len` bits.
  struct Key {
    uint64_t hi = 0;
    uint64_t lo = 0;
    uint8_t len = 0;
    bool v4 = true;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  static Key key_of(const router::IpAddr& ip, int len);

  std::unordered_set<Key, KeyHash> keys_;
  // The prefix lengths present, longest first, per family.
  std::vector<uint8_t> v4_lens_, v6_lens_;
};

}  // namespace sluice::plugins::ip_restriction
