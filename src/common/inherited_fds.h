#pragma once
// Descriptors handed on by the Sluice that started this one at a binary upgrade (SIGUSR2):
// its listening sockets and its data directory's lock, named in SLUICE_INHERITED_FDS="5,6,7".

#include <vector>

namespace sluice::common {

inline constexpr const char* kInheritedFdsEnv = "SLUICE_INHERITED_FDS";

// Thread: control. The descriptors not taken yet. The first call reads and removes the
// variable, drops names that are not open descriptors and marks the rest close-on-exec.
std::vector<int>& inherited_fds();

// The caller owns `fd` from now on.
void take_inherited_fd(int fd);

}  // namespace sluice::common
