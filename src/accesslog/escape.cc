#include "accesslog/escape.h"

#include <array>
#include <cstdint>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace sluice::accesslog {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

// Bit 1: escape=default escapes the byte; bit 2: escape=json does.
constexpr uint8_t kDefaultBit = 1;
constexpr uint8_t kJsonBit = 2;
constexpr std::array<uint8_t, 256> kEscapes = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    bool quote = c == '"' || c == '\\';
    t[c] = static_cast<uint8_t>((c < 0x20 || c >= 0x7f || quote ? kDefaultBit : 0) |
                                (c < 0x20 || quote ? kJsonBit : 0));
  }
  return t;
}();

constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

// Nonzero when a byte of w is below n (n <= 128), or equals c: no branch per byte.
constexpr uint64_t any_below(uint64_t w, uint8_t n) { return (w - kOnes * n) & ~w & kHighs; }
constexpr uint64_t any_equal(uint64_t w, uint8_t c) { return any_below(w ^ (kOnes * c), 1); }

// Whether any of the 8 bytes at p needs the escape `kBit` names.
template <uint8_t kBit>
bool block_needs(const unsigned char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof(w));
  uint64_t hit = any_below(w, 0x20) | any_equal(w, '"') | any_equal(w, '\\');
  if (kBit == kDefaultBit) {
    hit |= (w & kHighs) | any_equal(w, 0x7f);
  }
  return hit != 0;
}

#ifdef __SSE2__
// The first byte from `i` on that needs the escape, 16 bytes at a time; `i` of the last
// partial block when none does.
template <uint8_t kBit>
size_t scan16(const unsigned char* s, size_t n, size_t i) {
  const __m128i ctl_max = _mm_set1_epi8(0x1f);
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i bslash = _mm_set1_epi8('\\');
  const __m128i del = _mm_set1_epi8(0x7f);
  while (i + 16 <= n) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl_max), v),  // below 0x20
                               _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
    if (kBit == kDefaultBit) {
      hit = _mm_or_si128(hit, _mm_cmpeq_epi8(_mm_max_epu8(v, del), v));  // 0x7f and above
    }
    if (int mask = _mm_movemask_epi8(hit); mask != 0) {
      return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
    i += 16;
  }
  return i;
}
#endif

// The end of the stretch from `i` that needs no escape: 16 bytes at a time (SSE2), then 8,
// then byte by byte.
template <uint8_t kBit>
size_t plain_end(const unsigned char* s, size_t n, size_t i) {
#ifdef __SSE2__
  i = scan16<kBit>(s, n, i);
  if (i + 16 <= n) {
    return i;  // found within a whole block
  }
#endif
  while (i + 8 <= n && !block_needs<kBit>(s + i)) {
    i += 8;
  }
  while (i < n && (kEscapes[s[i]] & kBit) == 0) {
    ++i;
  }
  return i;
}

// Writes the escape of byte c at p (json: `\"`, `\n`, `\u00XX`, ...); returns the end.
char* json_escape(unsigned char c, char* p) {
  *p++ = '\\';
  switch (c) {
    case '"':
    case '\\':
      *p++ = static_cast<char>(c);
      return p;
    case '\n':
      *p++ = 'n';
      return p;
    case '\r':
      *p++ = 'r';
      return p;
    case '\t':
      *p++ = 't';
      return p;
    case '\b':
      *p++ = 'b';
      return p;
    case '\f':
      *p++ = 'f';
      return p;
    default:
      std::memcpy(p, "u00", 3);
      p[3] = kHex[c >> 4];
      p[4] = kHex[c & 0xf];
      return p + 5;
  }
}

// Copies `v` to `out` with each byte that needs it escaped by `escape`, in one pass; room for
// the worst case (`widest` bytes per byte) is made once.
template <uint8_t kBit, class Escaper>
void append_with(std::string_view v, size_t widest, Escaper escape, LineBuffer* out) {
  const auto* s = reinterpret_cast<const unsigned char*>(v.data());
  const size_t n = v.size();
  if (n == 0) {
    return;
  }
  char* const start = out->room(n * widest);
  char* p = start;
  size_t i = 0;
  while (true) {
    size_t j = plain_end<kBit>(s, n, i);
    copy_bytes(p, reinterpret_cast<const char*>(s) + i, j - i);
    p += j - i;
    if (j == n) {
      break;
    }
    p = escape(s[j], p);
    i = j + 1;
  }
  out->commit(static_cast<size_t>(p - start));
}

}  // namespace

void append_default_escaped(std::string_view v, LineBuffer* out) {
  append_with<kDefaultBit>(
      v, 4,
      [](unsigned char c, char* p) {
        p[0] = '\\';
        p[1] = 'x';
        p[2] = kHex[c >> 4];
        p[3] = kHex[c & 0xf];
        return p + 4;
      },
      out);
}

void append_json_escaped(std::string_view v, LineBuffer* out) {
  append_with<kJsonBit>(v, 6, json_escape, out);
}

}  // namespace sluice::accesslog
