#include "accesslog/escape.h"

namespace sluice::accesslog {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool needs_default_escape(unsigned char c) {
  return c < 0x20 || c >= 0x7f || c == '"' || c == '\\';
}

bool needs_json_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// Appends the bytes of `v` that need no escape in one go, up to the next that does.
template <class Needs>
size_t append_plain(std::string_view v, size_t i, Needs needs, std::string* out) {
  size_t j = i;
  while (j < v.size() && !needs(static_cast<unsigned char>(v[j]))) {
    ++j;
  }
  out->append(v.data() + i, j - i);
  return j;
}

}  // namespace

void append_default_escaped(std::string_view v, std::string* out) {
  size_t i = 0;
  while (true) {
    i = append_plain(v, i, needs_default_escape, out);
    if (i == v.size()) {
      return;
    }
    const auto c = static_cast<unsigned char>(v[i++]);
    const char esc[4] = {'\\', 'x', kHex[c >> 4], kHex[c & 0xf]};
    out->append(esc, sizeof(esc));
  }
}

void append_json_escaped(std::string_view v, std::string* out) {
  size_t i = 0;
  while (true) {
    i = append_plain(v, i, needs_json_escape, out);
    if (i == v.size()) {
      return;
    }
    const auto c = static_cast<unsigned char>(v[i++]);
    out->push_back('\\');
    switch (c) {
      case '"':
      case '\\':
        out->push_back(static_cast<char>(c));
        break;
      case '\n':
        out->push_back('n');
        break;
      case '\r':
        out->push_back('r');
        break;
      case '\t':
        out->push_back('t');
        break;
      case '\b':
        out->push_back('b');
        break;
      case '\f':
        out->push_back('f');
        break;
      default: {
        const char esc[5] = {'u', '0', '0', kHex[c >> 4], kHex[c & 0xf]};
        out->append(esc, sizeof(esc));
      }
    }
  }
}

}  // namespace sluice::accesslog
