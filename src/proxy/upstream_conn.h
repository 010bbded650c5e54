#pragma once
// One TCP connection to an upstream node, owned by either a client exchange (busy) or the
// worker's keep-alive pool (idle).

#include <cstdint>
#include <memory>
#include <string>

#include "io/buffer.h"
#include "io/event_loop.h"
#include "io/transport.h"
#include "proxy/upstream_request.h"

namespace sluice::proxy {

class Pool;

// Thread: worker
class UpstreamConn : public io::IoHandler {
 public:
  // A connection on `fd`, whose connect may still be in progress (not writable until it ends).
  UpstreamConn(io::EventLoop& loop, int fd, std::string key)
      : transport_(loop, this, fd), key_(std::move(key)) {
    transport_.set_writable(false);
  }

  void on_io(uint32_t events) override;

  int fd() const { return transport_.fd(); }
  io::SocketTransport& transport() { return transport_; }
  const std::string& key() const { return key_; }
  io::Buffer& in() { return in_; }

  bool connected = false;  // the TCP handshake finished
  uint32_t requests = 0;   // requests sent on this connection

  // Set while busy; null while pooled.
  UpstreamOwner* owner = nullptr;
  // Set while pooled.
  Pool* pool = nullptr;
  io::Timer idle_timer{&UpstreamConn::on_idle_timeout, this};

 private:
  static void on_idle_timeout(void* self);

  io::SocketTransport transport_;
  std::string key_;
  io::Buffer in_;
};

}  // namespace sluice::proxy
