#include "io/outbox.h"

#include <sys/socket.h>

#include <cerrno>

namespace sluice::io {

size_t Outbox::pending_bytes() const {
  size_t n = 0;
  for (int i = first_; i < n_; ++i) {
    n += iov_[i].iov_len;
  }
  return n;
}

void Outbox::advance(size_t written) {
  size_t left = written;
  while (first_ < n_ && left >= iov_[first_].iov_len) {
    left -= iov_[first_].iov_len;
    ++first_;
  }
  if (first_ < n_) {
    iov_[first_].iov_base = static_cast<char*>(iov_[first_].iov_base) + left;
    iov_[first_].iov_len -= left;
  }
}

Outbox::Result Outbox::flush(int fd, int* err, Ring* ring, IoHandler* h) {
  if (ring == nullptr) {
    return flush_now(fd, err);
  }
  if (op_.queued()) {
    return Result::kQueued;
  }
  if (op_.done()) {
    int r = op_.take();
    if (r < 0 && r != -EINTR) {
      if (r == -EAGAIN || r == -EWOULDBLOCK) {
        return Result::kBlocked;
      }
      *err = -r;
      return Result::kError;
    }
    if (r > 0) {
      advance(static_cast<size_t>(r));
    }
  }
  if (first_ == n_) {
    clear();
    return Result::kDone;
  }
  msg_ = msghdr{};
  msg_.msg_iov = &iov_[first_];
  msg_.msg_iovlen = static_cast<size_t>(n_ - first_);
  ring->queue_sendmsg(&op_, h, fd, &msg_);
  return Result::kQueued;
}

Outbox::Result Outbox::flush_now(int fd, int* err) {
  while (first_ < n_) {
    msghdr msg{};
    msg.msg_iov = &iov_[first_];
    msg.msg_iovlen = static_cast<size_t>(n_ - first_);
    ssize_t w = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return Result::kBlocked;
      }
      *err = errno;
      return Result::kError;
    }
    advance(static_cast<size_t>(w));
  }
  clear();
  return Result::kDone;
}

}  // namespace sluice::io
