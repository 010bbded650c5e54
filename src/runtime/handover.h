#pragma once
// Binary upgrade without refusing a connection, as nginx's USR2: the running gateway starts the
// binary at its own path with its listening sockets and its data directory's lock inherited
// (common/inherited_fds.h); the new process serves from the very same sockets, so nothing
// queued on them is lost, while the old one is told to drain (SIGTERM) by the operator.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "io/event_loop.h"
#include "io/socket.h"

namespace sluice::runtime {

// Thread: control. Takes every inherited listening socket bound to exactly `addr`.
std::vector<int> take_inherited_listeners(const io::SockAddr& addr);

// Thread: control. Closes what was inherited and not taken (an address the new config.yaml
// dropped: the old process still serves it until it exits); returns how many.
size_t close_untaken_inherited();

// This process's descriptor open on `path` (found through /proc/self/fd), or -1.
int find_open_fd(const std::string& path);

// Starts `argv` with `fds` inherited and named in SLUICE_INHERITED_FDS; returns its pid once
// the new process has reached main() (it closes SLUICE_STARTED_FD there: see
// common::close_started_fd) or after `wait_ms`.
//
// Until then the child holds a copy of every descriptor of this process, close-on-exec or not,
// and a socket a worker closes in that window stays registered with the worker's epoll (a
// registration goes only with the last reference to the file): an event for it would reach a
// freed handler. So the workers are parked (WorkerPark) around the call.
common::StatusOr<pid_t> spawn_successor(const std::vector<std::string>& argv,
                                        const std::vector<int>& fds, int wait_ms);

// Thread: control. Holds every given loop inside a posted task until destroyed; parked()
// says whether all of them got there within the timeout.
class WorkerPark {
 public:
  WorkerPark(const std::vector<io::EventLoop*>& loops, int timeout_ms);
  ~WorkerPark();
  WorkerPark(const WorkerPark&) = delete;
  WorkerPark& operator=(const WorkerPark&) = delete;
  bool parked() const { return parked_; }

 private:
  struct State;
  std::shared_ptr<State> state_;
  bool parked_ = false;
};

}  // namespace sluice::runtime
