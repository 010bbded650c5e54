// Fuzz target: http::normalize_path on the input as a raw path ('/' prepended when missing).
//
// The result must equal a slow reference written from the rules in http/path.h (decode
// everything into tagged bytes, split on '/', resolve with a stack), refusals included. On
// success: the path starts with '/', holds no "//" and no "." or ".." segment, is no longer
// than the input, is a view of the input exactly when it equals the input, and never writes
// past raw.size() bytes of the buffer (an exact-size heap buffer: ASan sees a write past it).
// A result with no '%' and no '#' (the bytes nginx leaves decoded and literal) normalises to
// itself.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "http/path.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::http::normalize_path;
using sluice::http::NormalizedPath;

int hex(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
    return (c | 0x20) - 'a' + 10;
  }
  return -1;
}

struct Byte {
  char c;
  bool encoded;
};

// The reference: returns false when the path is refused.
bool reference(std::string_view raw, std::string* out) {
  std::vector<Byte> bytes;
  for (size_t i = 1; i < raw.size();) {
    if (raw[i] == '%') {
      if (i + 2 >= raw.size()) {
        return false;
      }
      const int hi = hex(raw[i + 1]), lo = hex(raw[i + 2]);
      if (hi < 0 || lo < 0) {
        return false;
      }
      bytes.push_back({static_cast<char>(hi * 16 + lo), true});
      i += 3;
    } else {
      bytes.push_back({raw[i], false});
      ++i;
    }
  }
  bool encoded_slash = false, dots = false;
  for (const Byte& b : bytes) {
    const auto u = static_cast<uint8_t>(b.c);
    if (u < 0x20 || u == 0x7f || b.c == '\\' || (b.c == '#' && !b.encoded)) {
      return false;
    }
    encoded_slash = encoded_slash || (b.c == '/' && b.encoded);
  }
  // Segments between slashes (raw or decoded); empty ones vanish (merged slashes).
  std::vector<std::string> stack;
  std::string seg;
  bool seg_encoded_dot = false;
  bool trailing_slash = true;  // "/" alone
  auto finish = [&](bool at_end) {
    const size_t semi = seg.find(';');
    if (semi != std::string::npos) {
      const std::string head = seg.substr(0, semi);
      if ((head.empty() && !at_end) || head == "." || head == "..") {
        return false;
      }
    } else if (seg == "." || seg == "..") {
      if (seg_encoded_dot) {
        return false;
      }
      dots = true;
      if (seg == "..") {
        if (stack.empty()) {
          return false;
        }
        stack.pop_back();
      }
      trailing_slash = true;
      seg.clear();
      return true;
    }
    if (!seg.empty()) {
      stack.push_back(seg);
      trailing_slash = !at_end;
    } else {
      trailing_slash = true;
    }
    seg.clear();
    return true;
  };
  for (const Byte& b : bytes) {
    if (b.c == '/') {
      if (!finish(false)) {
        return false;
      }
      seg_encoded_dot = false;
      continue;
    }
    seg_encoded_dot = seg_encoded_dot || (b.c == '.' && b.encoded);
    seg.push_back(b.c);
  }
  if (!finish(true) || (encoded_slash && dots)) {
    return false;
  }
  out->assign("/");
  for (size_t i = 0; i < stack.size(); ++i) {
    out->append(stack[i]);
    if (i + 1 < stack.size() || trailing_slash) {
      out->push_back('/');
    }
  }
  for (size_t k = 0; k < out->size(); ++k) {
    const auto b = static_cast<uint8_t>((*out)[k]);
    const uint8_t next = k + 1 < out->size() ? static_cast<uint8_t>((*out)[k + 1]) : 0;
    if (b == 0xc0 || b == 0xc1 || (b == 0xe0 && next >= 0x80 && next <= 0x9f) ||
        (b == 0xf0 && next >= 0x80 && next <= 0x8f)) {
      return false;
    }
  }
  return true;
}

bool has_dot_segment(std::string_view p) {
  size_t start = 1;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string_view::npos) {
      end = p.size();
    }
    const std::string_view seg = p.substr(start, end - start);
    if (seg == "." || seg == "..") {
      return true;
    }
    start = end + 1;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.empty() || text[0] != '/') {
    text.insert(text.begin(), '/');
  }
  const ExactCopy raw(text);
  auto buf = std::make_unique<char[]>(raw.view().size());
  const NormalizedPath n = normalize_path(raw.view(), buf.get());
  std::string want;
  const bool ok = reference(raw.view(), &want);
  FUZZ_CHECK(n.ok() == ok);
  if (!ok) {
    FUZZ_CHECK(n.error != nullptr && n.error[0] != '\0' && n.path.empty());
    return 0;
  }
  const std::string_view p = n.path;
  FUZZ_CHECK(p == want);
  FUZZ_CHECK(!p.empty() && p[0] == '/' && p.size() <= raw.view().size());
  FUZZ_CHECK(p.find("//") == std::string_view::npos);
  FUZZ_CHECK(!has_dot_segment(p));
  FUZZ_CHECK((p.data() == raw.data()) == (p == raw.view()));
  if (p.data() != raw.data()) {
    FUZZ_CHECK(p.data() == buf.get());
  }
  if (p.find('%') == std::string_view::npos && p.find('#') == std::string_view::npos) {
    const std::string copy(p);
    auto again_buf = std::make_unique<char[]>(copy.size());
    const NormalizedPath again = normalize_path(copy, again_buf.get());
    FUZZ_CHECK(again.ok() && again.path == copy);
  }
  return 0;
}
