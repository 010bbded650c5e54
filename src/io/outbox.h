#pragma once
// Bytes queued for one socket as up to eight iovecs pointing into memory the caller keeps
// stable until flushed: a head string, a span of a peer's read buffer, chunk framing.
// One writev per flush; partial writes advance in place.

#include <sys/uio.h>

#include <cstddef>
#include <string_view>

namespace sluice::io {

// Thread: worker
class Outbox {
 public:
  enum class Result { kDone, kBlocked, kError };

  bool empty() const { return n_ == 0; }
  void add(std::string_view s) {
    if (!s.empty()) {
      iov_[n_].iov_base = const_cast<char*>(s.data());
      iov_[n_].iov_len = s.size();
      ++n_;
    }
  }
  size_t pending_bytes() const;
  // Writes as much as the socket takes. kBlocked means EAGAIN with bytes left.
  Result flush(int fd, int* err);
  void clear() { n_ = first_ = 0; }

 private:
  static constexpr int kMax = 8;
  iovec iov_[kMax];
  int n_ = 0;      // slots used
  int first_ = 0;  // first slot not fully written
};

}  // namespace sluice::io
