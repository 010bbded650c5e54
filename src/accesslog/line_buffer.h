#pragma once
// A growable byte buffer written through a pointer: the renderer makes room once per value
// (for its worst case) and then writes bytes without a check or a library call per piece. Its
// capacity is kept when it is cleared, so a worker's buffer stops allocating once grown.

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace sluice::accesslog {

// memcpy for the short pieces a line is made of (an address, a status, a header value), inline:
// whole-word moves that stay within [s, s + n), no library call.
inline void copy_bytes(char* d, const char* s, size_t n) {
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      std::memcpy(d + i, s + i, 8);
    }
    std::memcpy(d + n - 8, s + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(d, s, 4);
    std::memcpy(d + n - 4, s + n - 4, 4);
  } else {
    for (size_t i = 0; i < n; ++i) {
      d[i] = s[i];
    }
  }
}

// Thread: worker
class LineBuffer {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const char* data() const { return data_.get(); }
  std::string_view view() const { return {data_.get(), size_}; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) {
      grow(n - size_);
    }
  }
  // Room for `n` more bytes; commit() keeps those written.
  char* room(size_t n) {
    if (cap_ - size_ < n) {
      grow(n);
    }
    return data_.get() + size_;
  }
  void commit(size_t n) { size_ += n; }
  void append(std::string_view s) {
    copy_bytes(room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void push_back(char c) {
    *room(1) = c;
    ++size_;
  }

 private:
  void grow(size_t n) {
    size_t cap = cap_ * 2 > size_ + n ? cap_ * 2 : size_ + n;
    auto bigger = std::make_unique<char[]>(cap);
    if (size_ != 0) {
      std::memcpy(bigger.get(), data_.get(), size_);
    }
    data_ = std::move(bigger);
    cap_ = cap;
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t cap_ = 0;
};

}  // namespace sluice::accesslog
