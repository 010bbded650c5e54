#pragma once
// Byte classes and scanning loops shared by the HTTP/1 head parsers and the chunked decoder.

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sluice::h1 {

namespace char_class {
inline constexpr uint8_t kTchar = 1;  // RFC 9110 5.6.2 token character
inline constexpr uint8_t kHost = 2;   // may appear in uri-host [":" port] (no userinfo)

constexpr std::array<uint8_t, 256> make_table() {
  std::array<uint8_t, 256> t{};
  for (size_t c = '0'; c <= '9'; ++c) {
    t[c] = kTchar | kHost;
  }
  for (size_t c = 'a'; c <= 'z'; ++c) {
    t[c] = kTchar | kHost;
    t[c - 32] = kTchar | kHost;
  }
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) {
    t[static_cast<uint8_t>(c)] |= kTchar;
  }
  for (char c : std::string_view("-._~%!$&'()*+,;=:[]")) {
    t[static_cast<uint8_t>(c)] |= kHost;
  }
  return t;
}
inline constexpr std::array<uint8_t, 256> kTable = make_table();
}  // namespace char_class

inline bool has_class(char c, uint8_t cls) {
  return (char_class::kTable[static_cast<uint8_t>(c)] & cls) != 0;
}
inline bool is_tchar(char c) { return has_class(c, char_class::kTchar); }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_ows(char c) { return c == ' ' || c == '\t'; }

// A byte that may not appear inside a field line or request line: CTL except HTAB, and DEL.
inline bool is_line_stop(char ch) {
  auto c = static_cast<uint8_t>(ch);
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

// First line-stop byte in [p, end), or end: eight bytes at a time in a word; a word is looked
// at byte by byte only when it holds a control byte (usually the CR that ends the line).
inline const char* find_line_stop_portable(const char* p, const char* end) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    uint64_t below_space = (x - kOnes * 0x20) & ~x & kHigh;
    uint64_t d = x ^ (kOnes * 0x7f);
    uint64_t del = (d - kOnes) & ~d & kHigh;
    if ((below_space | del) != 0) {
      for (int i = 0; i < 8; ++i) {
        if (is_line_stop(p[i])) {
          return p + i;
        }
      }
    }
    p += 8;
  }
  while (p < end && !is_line_stop(*p)) {
    ++p;
  }
  return p;
}

// The same, sixteen bytes at a time with SSE2 where there is SSE2 (every x86-64).
inline const char* find_line_stop(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i k1f = _mm_set1_epi8(0x1f);
  const __m128i kDel = _mm_set1_epi8(0x7f);
  const __m128i kTab = _mm_set1_epi8('\t');
  while (end - p >= 16) {
    __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, k1f), x);  // x <= 0x1f
    __m128i stop =
        _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(x, kTab), ctl), _mm_cmpeq_epi8(x, kDel));
    int mask = _mm_movemask_epi8(stop);
    if (mask != 0) {
      return p + __builtin_ctz(static_cast<unsigned>(mask));
    }
    p += 16;
  }
#endif
  return find_line_stop_portable(p, end);
}

// ASCII case-insensitive compare against a literal that is already lower case.
inline bool equals_lower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) {
    return false;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c + 32);
    }
    if (c != lower[i]) {
      return false;
    }
  }
  return true;
}

inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_ows(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace sluice::h1
