#include "io/transport.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"
#include "io/event_loop.h"

namespace sluice::io {

SocketTransport::~SocketTransport() {
  rd_op_.cancel();
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void SocketTransport::on_events(uint32_t events) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    readable_ = true;
    // An edge while a read is on the ring may be for bytes that came after that read was
    // made: its short result must not then conclude the socket is drained.
    edge_during_read_ = edge_during_read_ || !rd_op_.idle();
  }
  if (events & (EPOLLHUP | EPOLLERR)) {
    hangup_ = true;
  }
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    fin_ = true;
  }
  if (events & EPOLLOUT) {
    writable_ = true;
  }
}

Transport::Read SocketTransport::read(Buffer& b, size_t max_buffer) {
  ssize_t n = 0;
  size_t room = 0;
  int err = 0;
  if (rd_op_.done()) {
    // The read queued on the ring was made; the buffer must not have moved since.
    int r = rd_op_.take();
    n = r < 0 ? -1 : r;
    err = r < 0 ? -r : 0;
    room = rd_room_;
    if (b.write_ptr() != rd_at_) {
      // Nothing may move the buffer while a read is queued; if something did, bytes are lost.
      SLUICE_LOG(kError, "fd {}: read buffer moved under a queued read; closing", fd_);
      n = -1;
      err = EIO;
    }
  } else {
    if (rd_op_.queued() || !readable_) {
      return Read::kWait;
    }
    if (b.writable() == 0) {
      b.compact();
      if (b.writable() == 0) {
        if (b.capacity() >= max_buffer) {
          return Read::kWait;  // full: the consumer must drain it first
        }
        b.reserve_total(std::min(b.capacity() * 2, max_buffer));
      }
    }
    room = b.writable();
    if (Ring* ring = loop_.ring()) {
      edge_during_read_ = false;
      ring->queue_recv(&rd_op_, handler_, fd_, b.write_ptr(), room);
      rd_at_ = b.write_ptr();
      rd_room_ = room;
      return Read::kWait;
    }
    n = ::recv(fd_, b.write_ptr(), room, 0);
    err = n < 0 ? errno : 0;
  }
  if (n > 0) {
    b.commit(static_cast<size_t>(n));
    if (static_cast<size_t>(n) < room) {
      // A short read drained the socket and the next edge re-arms us, unless the peer's FIN
      // is already queued: then the next recv() reports EOF and no new edge will come.
      // On the ring, an edge seen since the read was queued may be newer than the read (the
      // edge that would re-arm us is then spent): one more read finds out.
      readable_ = fin_ || edge_during_read_;
    }
    return Read::kData;
  }
  if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
    readable_ = err == EINTR;
    return Read::kWait;
  }
  readable_ = false;
  hangup_ = true;
  failed_ = n < 0;
  return Read::kEof;
}

Outbox::Result SocketTransport::write(Outbox& out, int* err) {
  Outbox::Result r = out.flush(fd_, err, loop_.ring(), handler_);
  if (r == Outbox::Result::kBlocked) {
    writable_ = false;
  }
  return r;
}

void SocketTransport::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

bool SocketTransport::cancel_read() {
  bool stray = rd_op_.done() && rd_op_.take() != -EAGAIN;
  rd_op_.cancel();
  return stray;
}

ssize_t send_now(int fd, const void* data, size_t len) {
  ssize_t n = ::send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  return n < 0 ? -errno : n;
}

}  // namespace sluice::io
