#pragma once
// Reading the embedded store while a gateway runs on it: `sluice config dump` opens the
// database read-only, without the data directory's lock, and reads every live entry in one
// read transaction. SQLite's WAL gives that transaction one committed state of the file, so a
// dump taken during Admin API writes is the store exactly as of one revision.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace sluice::store {

// Thread: any (value type)
struct LiveCopy {
  int64_t revision = 0;        // the store's revision the entries are as of
  std::vector<Entry> entries;  // live ones (not expired at `now_unix`), sorted by key
};

// Reads `<dir>/sluice.db`. Refuses a missing file (it creates nothing) and a file that is not
// Sluice's or has a newer schema, naming it.
common::StatusOr<LiveCopy> read_live_copy(const std::string& dir, int64_t now_unix);

}  // namespace sluice::store
