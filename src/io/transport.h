#pragma once
// The byte stream of one connection, and the only code of the data path that reads or writes
// a socket. Reads fill an io::Buffer, writes send an io::Outbox (vectored); both are queued on
// the loop's io_uring ring when it has one (io/ring.h), so a batch of events still costs one
// io_uring_enter. Transport is the interface a connection's codec sees; SocketTransport is
// the plain TCP one. A TLS transport will implement the same calls over memory buffers
// (OpenSSL BIO pairs) and use a SocketTransport underneath for the ciphertext.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "io/buffer.h"
#include "io/outbox.h"

namespace sluice::io {

class EventLoop;
class IoHandler;

// Thread: worker
class Transport {
 public:
  enum class Read : uint8_t {
    kData,  // bytes were appended to the buffer
    kWait,  // nothing now (no bytes, a read queued on the ring, or the buffer at its cap)
    kEof,   // the peer closed or reset (failed() tells which); nothing more will come
  };

  virtual ~Transport() = default;
  // Readiness edges from the event loop (EPOLLIN / OUT / RDHUP / HUP / ERR).
  virtual void on_events(uint32_t events) = 0;
  // Appends what the peer sent to `b`, growing it up to `max_buffer` bytes. While a read is
  // queued on the ring nothing may move `b`'s storage.
  virtual Read read(Buffer& b, size_t max_buffer) = 0;
  // Sends what `out` holds; Outbox::flush's results. Call only when writable().
  virtual Outbox::Result write(Outbox& out, int* err) = 0;
  // Half-closes: the peer reads EOF after what was sent.
  virtual void shutdown_write() = 0;
  // Forgets a queued read; returns true when one had completed with bytes, FIN or an error
  // that nobody took (a connection going back to a pool is then not clean).
  virtual bool cancel_read() = 0;
  virtual bool read_pending() const = 0;
  virtual bool readable() const = 0;
  virtual bool writable() const = 0;
  // The stream ended in an error (a reset, a broken TLS record), not a clean close.
  virtual bool failed() const = 0;
};

// A TCP socket; owns and closes the fd.
// Thread: worker
class SocketTransport final : public Transport {
 public:
  // `handler` is driven (on_io(0)) when a call queued on the loop's ring has its result.
  SocketTransport(EventLoop& loop, IoHandler* handler, int fd)
      : loop_(loop), handler_(handler), fd_(fd) {}
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  void on_events(uint32_t events) override;
  Read read(Buffer& b, size_t max_buffer) override;
  Outbox::Result write(Outbox& out, int* err) override;
  void shutdown_write() override;
  bool cancel_read() override;
  bool read_pending() const override { return !rd_op_.idle(); }
  bool readable() const override { return readable_; }
  bool writable() const override { return writable_; }

  int fd() const { return fd_; }
  // The peer's FIN is queued behind the data: a short read is not "drained", since no further
  // edge will come to report the EOF.
  bool fin() const { return fin_; }
  // EPOLLHUP / EPOLLERR seen, or the peer's FIN or a reset read.
  bool hangup() const { return hangup_; }
  // A read ended in an error (a reset), not a clean FIN: a body read until close is cut.
  bool failed() const override { return failed_; }
  // Tells the transport readiness it cannot see from an edge (a pooled connection is
  // silent; a finished connect is writable).
  void set_readable(bool on) { readable_ = on; }
  void set_writable(bool on) { writable_ = on; }

 private:
  EventLoop& loop_;
  IoHandler* handler_;
  int fd_;
  bool readable_ = true;           // may have bytes to read (edge seen, not yet drained)
  bool writable_ = true;           // may accept bytes (edge seen, no EAGAIN since)
  bool edge_during_read_ = false;  // a readable edge came while a ring read was queued
  bool fin_ = false;
  bool hangup_ = false;
  bool failed_ = false;
  RingOp rd_op_;                 // a read queued on the loop's ring
  const char* rd_at_ = nullptr;  // where that read writes, and its room
  size_t rd_room_ = 0;
};

// Sends `data` at once if the socket takes it, without waiting or queueing: for a last word
// before closing (the overload 503). Returns bytes sent or -errno.
ssize_t send_now(int fd, const void* data, size_t len);

}  // namespace sluice::io
