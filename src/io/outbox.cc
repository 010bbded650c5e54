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

Outbox::Result Outbox::flush(int fd, int* err) {
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
    auto left = static_cast<size_t>(w);
    while (first_ < n_ && left >= iov_[first_].iov_len) {
      left -= iov_[first_].iov_len;
      ++first_;
    }
    if (first_ < n_) {
      iov_[first_].iov_base = static_cast<char*>(iov_[first_].iov_base) + left;
      iov_[first_].iov_len -= left;
    }
  }
  clear();
  return Result::kDone;
}

}  // namespace sluice::io
