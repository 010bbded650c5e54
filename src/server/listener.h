#pragma once
// A worker's own SO_REUSEPORT listening socket: the kernel spreads connections over workers.

#include "io/event_loop.h"

namespace sluice::server {

class Worker;

// Thread: worker
class Listener : public io::IoHandler {
 public:
  Listener(Worker& w, int fd);
  ~Listener() override;
  void on_io(uint32_t events) override;
  int fd() const { return fd_; }

 private:
  Worker& w_;
  int fd_;
  uint16_t port_;
};

}  // namespace sluice::server
