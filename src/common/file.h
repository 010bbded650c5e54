#pragma once
// Whole-file reads for the control plane (config files, snapshots), never on a worker.

#include <string>

namespace sluice::common {

// Reads the whole file at `path` into *out; false (errno set by the failed open) when it
// cannot be opened.
bool read_file(const std::string& path, std::string* out);

}  // namespace sluice::common
