#pragma once
// Binary upgrade without refusing a connection, as nginx's USR2: the running gateway starts the
// binary at its own path with its listening sockets and its data directory's lock inherited
// (common/inherited_fds.h); the new process serves from the very same sockets, so nothing
// queued on them is lost, while the old one is told to drain (SIGTERM) by the operator.

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "io/socket.h"

namespace sluice::runtime {

// Thread: control. Takes every inherited listening socket bound to exactly `addr`.
std::vector<int> take_inherited_listeners(const io::SockAddr& addr);

// Thread: control. Closes what was inherited and not taken (an address the new config.yaml
// dropped: the old process still serves it until it exits); returns how many.
size_t close_untaken_inherited();

// This process's descriptor open on `path` (found through /proc/self/fd), or -1.
int find_open_fd(const std::string& path);

// Starts `argv` with `fds` inherited and named in SLUICE_INHERITED_FDS; returns its pid.
common::StatusOr<pid_t> spawn_successor(const std::vector<std::string>& argv,
                                        const std::vector<int>& fds);

}  // namespace sluice::runtime
