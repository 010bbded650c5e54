#pragma once
// A worker's own SO_REUSEPORT listening socket: the kernel spreads connections over workers.

#include "io/event_loop.h"
#include "server/conn_limits.h"

namespace sluice::server {

class Worker;

// Thread: worker
class Listener : public io::IoHandler {
 public:
  Listener(Worker& w, int fd, ConnCounter* cap);
  ~Listener() override;
  void on_io(uint32_t events) override;
  int fd() const { return fd_; }

 private:
  Worker& w_;
  int fd_;
  uint16_t port_;
  ConnCounter* cap_;
};

}  // namespace sluice::server
