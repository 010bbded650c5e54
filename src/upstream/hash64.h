#pragma once
// A fast 64-bit string hash for consistent hashing: FNV-1a over the bytes, then a final
// avalanche (xor-shift-multiply) so that nearby inputs land far apart on the ring. Streaming,
// so a key made of several pieces is hashed without being copied into one string.

#include <cstdint>
#include <string_view>

namespace sluice::upstream {

// Spreads the bits of `x` over the whole word (each input bit flips about half the output).
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

// Thread: any (a value on the stack)
class Hash64 {
 public:
  void add(std::string_view s) {
    for (unsigned char c : s) {
      h_ = (h_ ^ c) * 0x100000001b3ull;
    }
  }
  uint64_t finish() const { return mix64(h_); }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

inline uint64_t hash64(std::string_view s) {
  Hash64 h;
  h.add(s);
  return h.finish();
}

}  // namespace sluice::upstream
