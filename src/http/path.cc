// normalize_path: one pass over the raw path. The output stays a view of the input until the
// first byte that differs (a decoded escape, a merged slash, a removed dot segment); only then
// is the prefix copied into the caller's buffer.

#include "http/path.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/strings.h"

namespace sluice::http {

namespace {

// Bytes that need no look: not '%', '/', '.', ';', '\\', '#', a control byte or a UTF-8 lead
// byte of C0 and above (overlong forms start there).
constexpr std::array<bool, 256> kPlain = [] {
  std::array<bool, 256> t{};
  for (int b = 0x20; b < 0xc0; ++b) {
    t[b] = b != 0x7f && b != '%' && b != '/' && b != '.' && b != ';' && b != '\\' && b != '#';
  }
  return t;
}();

// Thread: any (one call's state). The normalised path so far: raw[0, n) while nothing has
// changed, buf[0, n) after.
class Output {
 public:
  Output(std::string_view raw, char* buf) : raw_(raw), buf_(buf) {}

  size_t size() const { return n_; }
  const char* data() const { return copied_ ? buf_ : raw_.data(); }
  char back() const { return data()[n_ - 1]; }
  std::string_view view(size_t from) const { return {data() + from, n_ - from}; }

  // Bytes of the input that land where they were read: no copy while nothing has changed.
  void keep(const char* p, size_t len) {
    if (copied_) {
      std::memcpy(buf_ + n_, p, len);
    }
    n_ += len;
  }
  void keep(char c) { keep(&c, 1); }
  // A byte that differs from the input (decoded), or an input byte dropped (a merged slash).
  void put(char c) {
    diverge();
    buf_[n_++] = c;
  }
  void drop() { diverge(); }
  void truncate(size_t n) {
    diverge();
    n_ = n;
  }

 private:
  void diverge() {
    if (!copied_) {
      std::memcpy(buf_, raw_.data(), n_);
      copied_ = true;
    }
  }

  std::string_view raw_;
  char* buf_;
  size_t n_ = 0;
  bool copied_ = false;
};

// Thread: any (one call's state). Walks the decoded bytes segment by segment.
class Normalizer {
 public:
  Normalizer(std::string_view raw, char* buf) : raw_(raw), out_(raw, buf) {}

  NormalizedPath run() {
    out_.keep('/');
    seg_start_ = 1;
    const size_t n = raw_.size();
    for (size_t i = 1; i < n;) {
      size_t j = i;
      while (j < n && kPlain[static_cast<uint8_t>(raw_[j])]) {
        ++j;
      }
      out_.keep(raw_.data() + i, j - i);
      i = j;
      if (i < n && !step(&i)) {
        return {{}, error_};
      }
    }
    if (!end_segment(/*last=*/true)) {
      return {{}, error_};
    }
    if (encoded_slash_ && dot_segment_) {
      return {{}, "encoded slash in a path with dot segments"};
    }
    if (high_) {
      if (const char* e = overlong_utf8(out_.view(0))) {
        return {{}, e};
      }
    }
    return {out_.view(0), nullptr};
  }

 private:
  bool fail(const char* why) {
    error_ = why;
    return false;
  }

  // One input byte or escape at *i.
  bool step(size_t* i) {
    char c = raw_[*i];
    bool decoded = false;
    if (c == '%') {
      const int hi = *i + 1 < raw_.size() ? common::hex_value(raw_[*i + 1]) : -1;
      const int lo = *i + 2 < raw_.size() ? common::hex_value(raw_[*i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return fail("bad percent-escape in path");
      }
      c = static_cast<char>(hi << 4 | lo);
      decoded = true;
      *i += 3;
    } else {
      *i += 1;
    }
    const auto u = static_cast<uint8_t>(c);
    if (u == 0) {
      return fail("NUL byte in path");
    }
    if (u < 0x20 || u == 0x7f) {
      return fail("control byte in path");
    }
    if (c == '\\') {
      return fail("backslash in path");
    }
    if (c == '#' && !decoded) {
      return fail("fragment in request-target");
    }
    if (c == '/') {
      return slash(decoded);
    }
    if (c == '.' || c == ';') {
      marked_ = true;
      encoded_dot_ = encoded_dot_ || (c == '.' && decoded);
    }
    high_ = high_ || u >= 0xc0;
    decoded ? out_.put(c) : out_.keep(c);
    return true;
  }

  bool slash(bool decoded) {
    encoded_slash_ = encoded_slash_ || decoded;
    if (!end_segment(/*last=*/false)) {
      return false;
    }
    if (out_.back() == '/') {
      out_.drop();  // merge_slashes
    } else {
      decoded ? out_.put('/') : out_.keep('/');
    }
    seg_start_ = out_.size();
    encoded_dot_ = marked_ = false;
    return true;
  }

  // The segment out_[seg_start_, size) is complete: check it, resolve it if it is a dot. An
  // empty segment before ';' is allowed last ("/;jsessionid=1"), as APISIX's servlet mode does.
  bool end_segment(bool last) {
    if (!marked_) {
      return true;  // no '.' and no ';': nothing to check
    }
    const std::string_view seg = out_.view(seg_start_);
    const size_t semi = seg.find(';');
    if (semi != std::string_view::npos) {
      const std::string_view head = seg.substr(0, semi);
      if ((head.empty() && !last) || head == "." || head == "..") {
        return fail("empty or dot segment with ';' parameters");
      }
      return true;
    }
    if (seg != "." && seg != "..") {
      return true;
    }
    if (encoded_dot_) {
      return fail("percent-encoded dot segment");
    }
    dot_segment_ = true;
    if (seg == ".") {
      out_.truncate(seg_start_);
      return true;
    }
    // out_ is ".../prev/..": keep up to and including the slash before prev.
    const size_t slash = seg_start_ - 1;
    if (slash == 0) {
      return fail("'..' above the root");
    }
    const char* d = out_.data();
    size_t p = slash - 1;
    while (d[p] != '/') {
      --p;  // out_[0] is '/': stops there at the latest
    }
    out_.truncate(p + 1);
    seg_start_ = p + 1;
    return true;
  }

  // The byte sequences that only ever encode a code point in more bytes than it needs.
  static const char* overlong_utf8(std::string_view s) {
    for (size_t k = 0; k < s.size(); ++k) {
      const auto b = static_cast<uint8_t>(s[k]);
      if (b < 0xc0) {
        continue;
      }
      const uint8_t next = k + 1 < s.size() ? static_cast<uint8_t>(s[k + 1]) : 0;
      if (b == 0xc0 || b == 0xc1 || (b == 0xe0 && next >= 0x80 && next <= 0x9f) ||
          (b == 0xf0 && next >= 0x80 && next <= 0x8f)) {
        return "overlong UTF-8 sequence in path";
      }
    }
    return nullptr;
  }

  std::string_view raw_;
  Output out_;
  size_t seg_start_ = 0;
  bool marked_ = false;         // the current segment has a '.' or ';'
  bool encoded_dot_ = false;    // the current segment has a decoded '.'
  bool high_ = false;           // a byte of C0 or above was written
  bool encoded_slash_ = false;  // a %2F was decoded
  bool dot_segment_ = false;    // a "." or ".." segment was resolved
  const char* error_ = nullptr;
};

}  // namespace

NormalizedPath normalize_path(std::string_view raw, char* buf) {
  if (raw.empty() || raw[0] != '/') {
    return {{}, "path does not start with '/'"};
  }
  return Normalizer(raw, buf).run();
}

}  // namespace sluice::http
