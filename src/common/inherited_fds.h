#pragma once
// Descriptors handed on by the Sluice that started this one at a binary upgrade (SIGUSR2):
// its listening sockets and its data directory's lock, named in SLUICE_INHERITED_FDS="5,6,7".

#include <vector>

namespace sluice::common {

inline constexpr const char* kInheritedFdsEnv = "SLUICE_INHERITED_FDS";
// A pipe's write end the previous process waits on: closing it says "started".
inline constexpr const char* kStartedFdEnv = "SLUICE_STARTED_FD";

// Thread: control. The descriptors not taken yet. The first call reads and removes the
// variable, drops names that are not open descriptors and marks the rest close-on-exec.
std::vector<int>& inherited_fds();

// The caller owns `fd` from now on.
void take_inherited_fd(int fd);

// First thing in main(): closes SLUICE_STARTED_FD, which tells the process that started this
// one that exec is over (every descriptor this one was not meant to keep is closed by now).
void close_started_fd();

}  // namespace sluice::common
