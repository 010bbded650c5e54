#pragma once
// Small string builders for the request path, cheaper than a format call.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::common {

inline void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

// The value of a hex digit (either case), or -1.
inline int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  const char l = static_cast<char>(c | 0x20);  // 'A'-'F' and only they become 'a'-'f'
  return l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
}

// PCRE's \s in ASCII: space, tab, newline, carriage return, form feed, vertical tab.
inline char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

inline bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// `s` without leading and trailing is_ascii_space characters.
inline std::string_view trim_ascii_space(std::string_view s) {
  while (!s.empty() && is_ascii_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_ascii_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace sluice::common
