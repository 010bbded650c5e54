#pragma once
// A worker's own SO_REUSEPORT listening socket: the kernel spreads connections over workers.

#include <cstdint>

#include "io/event_loop.h"
#include "server/conn_limits.h"

namespace sluice::server {

class Worker;

// What a listening socket serves: proxied traffic (apisix.node_listen) or only the Admin API
// (deployment.admin.admin_listen).
enum class ListenerKind : uint8_t { kProxy, kAdmin };

// Thread: worker
class Listener : public io::IoHandler {
 public:
  Listener(Worker& w, int fd, ConnCounter* cap, ListenerKind kind);
  ~Listener() override;
  void on_io(uint32_t events) override;
  int fd() const { return fd_; }

 private:
  Worker& w_;
  int fd_;
  uint16_t port_;
  ConnCounter* cap_;
  ListenerKind kind_;
};

}  // namespace sluice::server
