#pragma once
// A contiguous byte buffer with a consumed prefix, used for socket reads. Views handed out
// into it stay valid until the next compact() or reserve().

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace sluice::io {

// Thread: worker
class Buffer {
 public:
  explicit Buffer(size_t capacity = 0) { reserve_total(capacity); }

  const char* data() const { return data_.get() + begin_; }
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  std::string_view view() const { return {data(), size()}; }

  // Free space after the data.
  char* write_ptr() { return data_.get() + end_; }
  size_t writable() const { return cap_ - end_; }
  void commit(size_t n) { end_ += n; }

  void consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) {
      begin_ = end_ = 0;
    }
  }
  void clear() { begin_ = end_ = 0; }
  // Moves the data to the front so writable() is as large as it can be.
  void compact() {
    if (begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
  }
  size_t capacity() const { return cap_; }
  // Grows the allocation to `total` bytes (never shrinks).
  void reserve_total(size_t total) {
    if (total <= cap_) {
      return;
    }
    auto fresh = std::make_unique_for_overwrite<char[]>(total);
    if (size() > 0) {
      std::memcpy(fresh.get(), data(), size());
    }
    end_ -= begin_;
    begin_ = 0;
    data_ = std::move(fresh);
    cap_ = total;
  }
  // Hands the (empty) allocation to a free list, leaving this buffer without memory.
  std::unique_ptr<char[]> detach() {
    cap_ = begin_ = end_ = 0;
    return std::move(data_);
  }
  // Takes an allocation of `capacity` bytes from a free list; the buffer must be empty.
  void adopt(std::unique_ptr<char[]> data, size_t capacity) {
    data_ = std::move(data);
    cap_ = capacity;
    begin_ = end_ = 0;
  }
  // Releases memory of an idle buffer.
  void release() {
    data_.reset();
    cap_ = begin_ = end_ = 0;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t cap_ = 0, begin_ = 0, end_ = 0;
};

}  // namespace sluice::io
