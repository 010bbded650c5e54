#pragma once
// Small ASCII helpers the router uses on the request path; none of them allocates.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice::router {

// Hosts longer than this never match a host group or the `host` variable.
inline constexpr size_t kMaxHostLen = 256;

inline char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// memcmp(a, b, n) == 0 for the short strings the router compares, without a library call.
inline bool bytes_equal(const char* a, const char* b, size_t n) {
  while (n >= 8) {
    uint64_t x;
    uint64_t y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) {
      return false;
    }
    a += 8;
    b += 8;
    n -= 8;
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) {
      return false;
    }
  }
  return true;
}

inline uint64_t load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

inline uint64_t load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// 64x64 -> 128-bit multiply, folded: the mixing step of the wyhash family.
inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

// A fast non-cryptographic hash for table lookups: whole-word loads, overlapping at the tail,
// never a byte loop. The tables are built from configuration, so a client cannot grow a probe
// chain by choosing the strings it sends.
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kA = 0xa0761d6478bd642full;
  constexpr uint64_t kB = 0xe7037ed1a0b428dbull;
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t seed = kA ^ n;
  uint64_t a = 0;
  uint64_t b = 0;
  if (n >= 8) {
    size_t left = n;
    while (left > 16) {
      seed = fold_mul(load64(p) ^ kB, load64(p + 8) ^ seed);
      p += 16;
      left -= 16;
    }
    a = left > 8 ? load64(p) : load64(p + left - 8);
    b = load64(p + left - 8);
  } else if (n >= 4) {
    a = load32(p);
    b = load32(p + n - 4);
  } else if (n > 0) {
    a = (uint64_t{static_cast<uint8_t>(p[0])} << 16) |
        (uint64_t{static_cast<uint8_t>(p[n >> 1])} << 8) | static_cast<uint8_t>(p[n - 1]);
  }
  return fold_mul(kB ^ n, fold_mul(a ^ kB, b ^ seed));
}

// Host as nginx's $host sees it: port stripped ("[::1]:80" -> "[::1]"), lower-cased, one
// trailing dot dropped. Writes into buf (kMaxHostLen bytes) and returns a view of it; empty
// when the host is empty, malformed or too long.
inline std::string_view normalize_host(std::string_view raw, char* buf) {
  size_t end = raw.size();
  if (!raw.empty() && raw[0] == '[') {
    end = raw.find(']');
    if (end == std::string_view::npos) {
      return {};
    }
    ++end;
    if (end < raw.size() && raw[end] != ':') {
      return {};
    }
  } else {
    end = raw.find(':');
    if (end == std::string_view::npos) {
      end = raw.size();
    }
  }
  if (end > 0 && raw[end - 1] == '.') {
    --end;
  }
  if (end == 0 || end > kMaxHostLen) {
    return {};
  }
  for (size_t i = 0; i < end; ++i) {
    buf[i] = ascii_lower(raw[i]);
  }
  return {buf, end};
}

// Build-time twin of normalize_host for route hosts ("*.Foo.com." -> "*.foo.com").
inline std::string normalize_host_pattern(std::string_view host) {
  std::string out(host);
  if (!out.empty() && out.back() == '.') {
    out.pop_back();
  }
  for (char& c : out) {
    c = ascii_lower(c);
  }
  return out;
}

}  // namespace sluice::router
