#pragma once
// One TCP connection to an upstream node, owned by either a client exchange (busy) or the
// worker's keep-alive pool (idle).

#include <cstdint>
#include <memory>
#include <string>

#include "io/buffer.h"
#include "io/event_loop.h"

namespace sluice::proxy {

class Pool;

// Whoever currently drives a busy upstream connection.
// Thread: worker
class UpstreamOwner {
 public:
  virtual ~UpstreamOwner() = default;
  virtual void on_upstream_event() = 0;
};

// Thread: worker
class UpstreamConn : public io::IoHandler {
 public:
  UpstreamConn(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}
  ~UpstreamConn() override;

  void on_io(uint32_t events) override;

  int fd() const { return fd_; }
  const std::string& key() const { return key_; }
  io::Buffer& in() { return in_; }

  bool readable = true;    // may have bytes to read (edge seen, not yet drained)
  bool writable = false;   // may accept bytes (edge seen, no EAGAIN since)
  bool connected = false;  // the TCP handshake finished
  bool hangup = false;     // EPOLLHUP / EPOLLERR seen, or the peer's FIN read
  // The peer's FIN is queued behind the data: a short read must not be taken as "drained",
  // since no further edge will come to report the EOF.
  bool fin = false;
  // A read ended in an error (a reset), not a clean FIN: a body read until close is cut.
  bool failed = false;
  uint32_t requests = 0;  // requests sent on this connection
  // A read queued on the loop's ring (io/ring.h), and the room it was given.
  io::RingOp rd_op;
  const char* rd_at = nullptr;
  size_t rd_room = 0;

  // Set while busy; null while pooled.
  UpstreamOwner* owner = nullptr;
  // Set while pooled.
  Pool* pool = nullptr;
  io::Timer idle_timer{&UpstreamConn::on_idle_timeout, this};

 private:
  static void on_idle_timeout(void* self);

  int fd_;
  std::string key_;
  io::Buffer in_;
};

}  // namespace sluice::proxy
