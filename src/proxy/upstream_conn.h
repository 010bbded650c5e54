#pragma once
// One connection to an upstream node, plain TCP or TLS over it, owned by either a client
// exchange (busy) or the worker's keep-alive pool (idle).

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>

#include "io/buffer.h"
#include "io/event_loop.h"
#include "io/transport.h"
#include "proxy/upstream_request.h"
#include "tls/context.h"
#include "tls/transport.h"

namespace sluice::proxy {

class Pool;
class H2Client;

// Thread: worker
class UpstreamConn : public io::IoHandler {
 public:
  // A connection on `fd`, whose connect may still be in progress (not writable until it ends).
  // (Both out of line: the H2Client they own is incomplete here.)
  UpstreamConn(io::EventLoop& loop, int fd, std::string key);
  ~UpstreamConn() override;

  void on_io(uint32_t events) override;

  // Speaks TLS over the socket from now on, with `ssl` (from `ctx`, which the connection keeps
  // alive for the session it keeps at the end). The handshake runs with the first write.
  void start_tls(SSL* ssl, std::shared_ptr<const tls::ClientContext> ctx);

  int fd() const { return transport_.fd(); }
  // The socket, for connect state and readiness.
  io::SocketTransport& socket() { return transport_; }
  // What the codec reads and writes: the TLS transport, or the socket.
  io::Transport& stream() {
    return tls_ ? static_cast<io::Transport&>(*tls_) : static_cast<io::Transport&>(transport_);
  }
  tls::TlsTransport* tls() { return tls_.get(); }
  const tls::ClientContext* tls_context() const { return tls_ctx_.get(); }
  // The TCP connect finished and, on a TLS connection, so did the handshake.
  bool ready() const { return connected && (!tls_ || tls_->handshake_done()); }
  // The peer reset the connection, or (TLS) a record or the handshake broke.
  bool failed() const { return transport_.failed() || (tls_ && !tls_->error().empty()); }
  const std::string& key() const { return key_; }
  io::Buffer& in() { return in_; }

  bool connected = false;     // the TCP handshake finished
  bool session_kept = false;  // TLS: this connection's session was kept for resumption
  uint32_t requests = 0;      // requests sent on this connection

  // An HTTP/2 connection's session (scheme grpc); null on HTTP/1.1.
  std::unique_ptr<H2Client> h2;
  // Set while busy; null while pooled.
  UpstreamOwner* owner = nullptr;
  // Set while pooled.
  Pool* pool = nullptr;
  io::Timer idle_timer{&UpstreamConn::on_idle_timeout, this};

 private:
  static void on_idle_timeout(void* self);

  io::SocketTransport transport_;
  std::shared_ptr<const tls::ClientContext> tls_ctx_;
  std::unique_ptr<tls::TlsTransport> tls_;  // after transport_: it goes first
  std::string key_;
  io::Buffer in_;
};

}  // namespace sluice::proxy
