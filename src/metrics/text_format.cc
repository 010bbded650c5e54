#include "metrics/text_format.h"

#include <charconv>
#include <cmath>

namespace sluice::metrics {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0 when there is none.
size_t utf8_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) {
    return 1;
  }
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) {
    return 0;
  }
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) {
      return 0;
    }
  }
  return n;
}

}  // namespace

void append_label(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append("=\"");
  for (size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
      ++i;
    } else if (c == '\n') {
      out.append("\\n");
      ++i;
    } else if (const size_t n = utf8_length(value, i)) {
      out.append(value.substr(i, n));
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD: Prometheus rejects invalid UTF-8
      ++i;
    }
  }
  out.push_back('"');
}

void append_double(std::string& out, double x) {
  if (std::isnan(x)) {
    out.append("NaN");
    return;
  }
  if (std::isinf(x)) {
    out.append(x > 0 ? "+Inf" : "-Inf");
    return;
  }
  // Shortest round-trip digits in fixed notation: at most 309 before the point (DBL_MAX) or
  // "0." plus 323 zeros plus 17 digits after it (the smallest denormal), and a sign.
  char buf[400];
  auto r = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::fixed);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace sluice::metrics
