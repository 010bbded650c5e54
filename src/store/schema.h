#pragma once
// Opening Sluice's database file: recognising it (application_id, schema version), checking it
// is intact, setting the durability pragmas, and creating the schema in an empty file.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "store/sqlite_db.h"

namespace sluice::store {

// "Sluc": PRAGMA application_id of a Sluice database.
inline constexpr int64_t kApplicationId = 0x536c7563;
// PRAGMA user_version of the schema this build writes; a newer file is refused. Version 2 added
// the history table (`sluice config rollback`); a version 1 file gains it when opened.
inline constexpr int64_t kSchemaVersion = 2;
// The changes the history keeps: the store rolls back at most this many revisions.
inline constexpr int64_t kHistoryRevisions = 10000;

// Opens `path`, refusing (with a message naming it) a file that is not SQLite, is corrupt,
// belongs to another application or has a newer schema. The connection comes back in WAL mode
// with synchronous=FULL and the schema in place.
common::StatusOr<SqliteDb> open_sluice_db(const std::string& path);

}  // namespace sluice::store
