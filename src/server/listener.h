#pragma once
// A worker's own SO_REUSEPORT listening socket: the kernel spreads connections over workers.

#include <cstdint>

#include "io/event_loop.h"
#include "server/conn_limits.h"
#include "tls/context.h"

namespace sluice::server {

class Worker;

// What a listening socket serves: proxied traffic (apisix.node_listen, apisix.ssl.listen),
// the same with HTTP/2 as well (enable_http2: h2c by prior knowledge on a plain port, ALPN h2
// on a TLS one), or only the Admin API (deployment.admin.admin_listen).
enum class ListenerKind : uint8_t { kProxy, kProxyH2, kAdmin };

// Thread: worker
class Listener : public io::IoHandler {
 public:
  // `tls`: the listener speaks TLS with that context (owned by the gateway); null: plaintext.
  Listener(Worker& w, int fd, ConnCounter* cap, ListenerKind kind,
           const tls::ServerContext* tls = nullptr);
  ~Listener() override;
  void on_io(uint32_t events) override;
  int fd() const { return fd_; }

 private:
  Worker& w_;
  int fd_;
  uint16_t port_;
  ConnCounter* cap_;
  ListenerKind kind_;
  const tls::ServerContext* tls_;
};

}  // namespace sluice::server
