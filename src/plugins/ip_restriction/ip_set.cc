#include "plugins/ip_restriction/ip_set.h"

#include <algorithm>

namespace sluice::plugins::ip_restriction {

namespace {

uint64_t load_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) {
    v = v << 8 | p[i];
  }
  return v;
}

// The top `bits` bits of a 64-bit word (bits in 0..64).
uint64_t top_bits(uint64_t v, int bits) {
  if (bits <= 0) {
    return 0;
  }
  return bits >= 64 ? v : v & ~(~uint64_t{0} >> bits);
}

void insert_len(std::vector<uint8_t>* lens, uint8_t len) {
  if (std::find(lens->begin(), lens->end(), len) == lens->end()) {
    lens->push_back(len);
    std::sort(lens->begin(), lens->end(), std::greater<>());
  }
}

}  // namespace

size_t IpSet::KeyHash::operator()(const Key& k) const {
  // Multiply-xorshift mixing of both halves; the keys come from configuration, not clients.
  uint64_t h = k.hi * 0x9e3779b97f4a7c15ull ^ (k.lo + 0x632be59bd9b4e019ull);
  h ^= (uint64_t{k.len} << 1 | (k.v4 ? 1u : 0u)) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  return static_cast<size_t>(h ^ (h >> 29));
}

IpSet::Key IpSet::key_of(const router::IpAddr& ip, int len) {
  Key k;
  k.len = static_cast<uint8_t>(len);
  k.v4 = ip.v4;
  if (ip.v4) {
    k.lo = top_bits(load_be(ip.bytes.data(), 4) << 32, len) >> 32;
  } else {
    k.hi = top_bits(load_be(ip.bytes.data(), 8), len);
    k.lo = top_bits(load_be(ip.bytes.data() + 8, 8), len - 64);
  }
  return k;
}

void IpSet::add(const router::Cidr& block) {
  keys_.insert(key_of(block.base, block.prefix_len));
  insert_len(block.base.v4 ? &v4_lens_ : &v6_lens_, static_cast<uint8_t>(block.prefix_len));
}

bool IpSet::contains(const router::IpAddr& ip) const {
  for (uint8_t len : ip.v4 ? v4_lens_ : v6_lens_) {
    if (keys_.count(key_of(ip, len)) != 0) {
      return true;
    }
  }
  return false;
}

}  // namespace sluice::plugins::ip_restriction
