#pragma once
// Who holds a listening TCP port: for the "address already in use" message at start.

#include <cstdint>
#include <string>

namespace sluice::io {

// "pid 1234 (sluice)" for a process of ours that listens on `port` (read from /proc/net/tcp,
// tcp6 and /proc/<pid>/fd), skipping `except_pid`; empty when no readable process has it
// (another user's process, or a container boundary).
std::string port_owner(uint16_t port, int except_pid);

}  // namespace sluice::io
