#include "plugins/proxy_rewrite/uri_text.h"

#include <cstring>

#include "common/strings.h"

namespace sluice::plugins::proxy_rewrite {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

void append_percent(unsigned char c, std::string* out) {
  out->push_back('%');
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 15]);
}

// Decodes %XX into `out` (whose start is `from`), then resolves the segments in place.
void resolve_segments(std::string* out, size_t from) {
  std::string& s = *out;
  size_t n = s.size();
  size_t w = from + 1;  // s[from] == '/': the output always keeps its leading slash
  size_t i = from + 1;
  while (i < n) {
    size_t j = s.find('/', i);
    bool slash = j != std::string::npos;
    if (!slash) {
      j = n;
    }
    std::string_view seg(s.data() + i, j - i);
    if (seg.empty() || seg == ".") {
      // A repeated slash or a `.` segment leaves nothing; the slash before it stays.
    } else if (seg == "..") {
      if (w > from + 1) {  // drop the last segment written, keeping the slash before it
        w = s.rfind('/', w - 2) + 1;
      }
    } else {
      std::memmove(&s[w], &s[i], seg.size());  // w <= i: the bytes move left
      w += seg.size();
      if (slash) {
        s[w++] = '/';
      }
    }
    i = j + 1;
  }
  s.resize(w);
}

}  // namespace

void append_normalized_path(std::string_view raw, std::string* out) {
  const size_t from = out->size();
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%' && i + 2 < raw.size()) {
      int hi = common::hex_value(raw[i + 1]), lo = common::hex_value(raw[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out->push_back(static_cast<char>(hi << 4 | lo));
        i += 2;
        continue;
      }
    }
    out->push_back(c);
  }
  if (out->size() > from && (*out)[from] == '/') {
    resolve_segments(out, from);
  }
}

void append_escaped_uri(std::string_view in, std::string* out) {
  for (char ch : in) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == '#' || c == '%' || c == '?' || c >= 0x7f) {
      append_percent(c, out);
    } else {
      out->push_back(ch);
    }
  }
}

void append_wire_safe(std::string_view in, std::string* out) {
  for (char ch : in) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      append_percent(c, out);
    } else {
      out->push_back(ch);
    }
  }
}

void make_header_safe(std::string* v) {
  auto unsafe = [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\t') || c == 0x7f;
  };
  size_t first = 0;
  while (first < v->size() && !unsafe((*v)[first])) {
    ++first;
  }
  if (first == v->size()) {
    return;
  }
  std::string out = v->substr(0, first);
  for (size_t i = first; i < v->size(); ++i) {
    if (unsafe((*v)[i])) {
      append_percent(static_cast<unsigned char>((*v)[i]), &out);
    } else {
      out.push_back((*v)[i]);
    }
  }
  v->swap(out);
}

}  // namespace sluice::plugins::proxy_rewrite
