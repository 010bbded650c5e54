#include "plugins/request_id/id_gen.h"

#include <sys/random.h>

#include <chrono>
#include <cstring>

namespace sluice::plugins::request_id {

namespace {

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64: spreads one seed word over the state when getrandom cannot fill it.
uint64_t splitmix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr char kHex[] = "0123456789abcdef";
// nanoid's url alphabet, as the nanoid Lua module uses it.
constexpr char kNanoidAlphabet[] =
    "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";
constexpr char kBase62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
constexpr uint64_t kKsuidEpoch = 1400000000;

}  // namespace

Rng::Rng() {
  if (getrandom(s_, sizeof(s_), 0) != static_cast<ssize_t>(sizeof(s_))) {
    uint64_t seed =
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        reinterpret_cast<uintptr_t>(this);
    for (uint64_t& w : s_) {
      w = splitmix(&seed);
    }
  }
  if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) {
    s_[0] = 1;  // the one state xoshiro cannot leave
  }
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

// Lemire's multiply-and-reject: uniform without a division on the common path.
uint32_t Rng::below(uint32_t n) {
  uint64_t m = static_cast<uint64_t>(static_cast<uint32_t>(next() >> 32)) * n;
  uint32_t low = static_cast<uint32_t>(m);
  if (low < n) {
    const uint32_t threshold = (0u - n) % n;
    while (low < threshold) {
      m = static_cast<uint64_t>(static_cast<uint32_t>(next() >> 32)) * n;
      low = static_cast<uint32_t>(m);
    }
  }
  return static_cast<uint32_t>(m >> 32);
}

Rng& thread_rng() {
  thread_local Rng rng;
  return rng;
}

void append_uuid(Rng& rng, std::string* out) {
  uint8_t b[16];
  const uint64_t hi = rng.next(), lo = rng.next();
  std::memcpy(b, &hi, 8);
  std::memcpy(b + 8, &lo, 8);
  b[6] = (b[6] & 0x0f) | 0x40;  // version 4
  b[8] = (b[8] & 0x3f) | 0x80;  // variant 10xx
  char text[kUuidLen];
  size_t o = 0;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      text[o++] = '-';
    }
    text[o++] = kHex[b[i] >> 4];
    text[o++] = kHex[b[i] & 15];
  }
  out->append(text, kUuidLen);
}

void append_nanoid(Rng& rng, std::string* out) {
  char text[kNanoidLen];
  uint64_t bits = rng.next();
  int left = 10;  // six bits per character: ten from one 64-bit draw
  for (char& c : text) {
    if (left == 0) {
      bits = rng.next();
      left = 10;
    }
    c = kNanoidAlphabet[bits & 63];
    bits >>= 6;
    --left;
  }
  out->append(text, kNanoidLen);
}

void append_range_id(Rng& rng, std::string_view char_set, size_t length, std::string* out) {
  const size_t at = out->size();
  out->resize(at + length);
  char* p = out->data() + at;
  const auto n = static_cast<uint32_t>(char_set.size());
  for (size_t i = 0; i < length; ++i) {
    p[i] = char_set[rng.below(n)];
  }
}

void append_ksuid(Rng& rng, uint64_t unix_seconds, std::string* out) {
  // 20 bytes, big-endian: the timestamp, then 128 random bits; as five 32-bit words.
  uint32_t words[5];
  words[0] = static_cast<uint32_t>(unix_seconds > kKsuidEpoch ? unix_seconds - kKsuidEpoch : 0);
  const uint64_t a = rng.next(), b = rng.next();
  words[1] = static_cast<uint32_t>(a >> 32);
  words[2] = static_cast<uint32_t>(a);
  words[3] = static_cast<uint32_t>(b >> 32);
  words[4] = static_cast<uint32_t>(b);
  // Base62 by repeated long division of the 160-bit number, least significant digit first.
  char text[kKsuidLen];
  for (int pos = kKsuidLen - 1; pos >= 0; --pos) {
    uint64_t rem = 0;
    for (uint32_t& w : words) {
      const uint64_t cur = (rem << 32) | w;
      w = static_cast<uint32_t>(cur / 62);
      rem = cur % 62;
    }
    text[pos] = kBase62[rem];
  }
  out->append(text, kKsuidLen);
}

}  // namespace sluice::plugins::request_id
