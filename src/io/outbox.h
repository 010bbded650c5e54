#pragma once
// Bytes queued for one socket as up to eight iovecs pointing into memory the caller keeps
// stable until flushed: a head string, a span of a peer's read buffer, chunk framing.
// One writev per flush; partial writes advance in place. With a Ring, the write is queued
// and made with the loop's next batch; flush() says kQueued until its result is in.

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <string_view>

#include "io/ring.h"

namespace sluice::io {

// Thread: worker
class Outbox {
 public:
  // kQueued: the write waits in the ring; the handler is driven once it was made.
  enum class Result { kDone, kBlocked, kError, kQueued };

  bool empty() const { return n_ == 0; }
  void add(std::string_view s) {
    if (!s.empty()) {
      iov_[n_].iov_base = const_cast<char*>(s.data());
      iov_[n_].iov_len = s.size();
      ++n_;
    }
  }
  size_t pending_bytes() const;
  // The bytes not yet written, for a transport that copies them out (TLS encrypts them).
  int pending_count() const { return n_ - first_; }
  const iovec& pending_at(int i) const { return iov_[first_ + i]; }
  // Marks `n` pending bytes as written (they were copied out); empties the box at the end.
  void consume(size_t n) {
    advance(n);
    if (first_ == n_) {
      n_ = first_ = 0;
    }
  }
  // Writes as much as the socket takes. kBlocked means EAGAIN with bytes left. With `ring`,
  // the write is queued on it for `h` (kQueued) and a later flush() takes its result.
  Result flush(int fd, int* err, Ring* ring = nullptr, IoHandler* h = nullptr);
  // Drops the queued bytes, and a queued write with them.
  void clear() {
    n_ = first_ = 0;
    op_.cancel();
  }
  // Forgets a queued write (the bytes stay queued).
  void cancel() { op_.cancel(); }

 private:
  Result flush_now(int fd, int* err);
  // Steps over `written` bytes.
  void advance(size_t written);

  static constexpr int kMax = 8;
  iovec iov_[kMax];
  int n_ = 0;      // slots used
  int first_ = 0;  // first slot not fully written
  RingOp op_;
  msghdr msg_{};
};

}  // namespace sluice::io
