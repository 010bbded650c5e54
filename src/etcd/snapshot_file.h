#pragma once
// The last configuration etcd gave, kept in `sluice.data_dir` so that a node started while
// etcd is down serves it. Written atomically (a temporary file, fsync, rename, fsync of the
// directory) and checksummed (SHA-256 of the payload in the first line): a torn or edited
// file is refused, never half-served.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace sluice::etcd {

// Thread: any (value type)
struct PersistedSet {
  std::string prefix;  // the etcd prefix it was read under
  int64_t revision = 0;
  std::vector<store::Entry> entries;  // the resources, as last applied (valid ones only)
};

common::Status write_snapshot_file(const std::string& path, const PersistedSet& set);
// An error naming the file when it is missing, torn, altered or not Sluice's.
common::StatusOr<PersistedSet> read_snapshot_file(const std::string& path);

}  // namespace sluice::etcd
