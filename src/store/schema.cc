#include "store/schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <optional>
#include <vector>

namespace sluice::store {

using common::Status;
using common::StatusOr;

namespace {

// Applied in one transaction to an empty file. expire_at 0 means "never"; the partial index
// keeps MIN(expire_at) and the expiry sweep off the full table.
constexpr const char* kCreateSchema = R"sql(
CREATE TABLE kv (
  key TEXT NOT NULL PRIMARY KEY,
  value TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  mod_revision INTEGER NOT NULL,
  expire_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX kv_expire_at ON kv (expire_at) WHERE expire_at > 0;
CREATE TABLE meta (name TEXT NOT NULL PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta (name, value) VALUES ('revision', 0);
)sql";

// One row per change at its revision: the key and what it held just before (NULL: absent), so
// the state at any kept revision is the earliest row after it, key by key.
constexpr const char* kCreateHistory = R"sql(
CREATE TABLE history (
  revision INTEGER NOT NULL PRIMARY KEY,
  key TEXT NOT NULL,
  prev_value TEXT
);
)sql";

// A first-row, first-column text query; nullopt on failure (the connection says why).
std::optional<std::string> query_text(SqliteDb& db, const char* sql) {
  auto statement = Statement::prepare(db.get(), sql);
  if (!statement) {
    return std::nullopt;
  }
  Query q(*statement);
  const int rc = q.step();
  if (rc == SQLITE_ROW) {
    return q.text_at(0);
  }
  return rc == SQLITE_DONE ? std::optional<std::string>("") : std::nullopt;
}

std::optional<int64_t> query_int(SqliteDb& db, const char* sql) {
  auto statement = Statement::prepare(db.get(), sql);
  if (!statement) {
    return std::nullopt;
  }
  Query q(*statement);
  if (q.step() != SQLITE_ROW) {
    return std::nullopt;
  }
  return q.int_at(0);
}

Status unreadable(const SqliteDb& db, const std::string& path) {
  switch (db.last_code()) {
    case SQLITE_NOTADB:
      return Status::error(fmt::format("{} is not a SQLite database ({})", path, db.last_error()));
    case SQLITE_CORRUPT:
      return Status::error(
          fmt::format("{} is corrupt ({}); restore it from a backup", path, db.last_error()));
    default:
      return Status::error(fmt::format("cannot read {}: {}", path, db.last_error()));
  }
}

// Checks the file is Sluice's. Returns true for an empty file that still needs the schema.
StatusOr<bool> check_identity(SqliteDb& db, const std::string& path) {
  const auto app = query_int(db, "PRAGMA application_id");
  const auto version = app ? query_int(db, "PRAGMA user_version") : std::nullopt;
  const auto objects = version ? query_int(db, "SELECT count(*) FROM sqlite_master") : std::nullopt;
  if (!objects) {
    return unreadable(db, path);
  }
  if (*app == 0 && *version == 0 && *objects == 0) {
    return true;
  }
  if (*app != kApplicationId) {
    return Status::error(fmt::format(
        "{} is not a Sluice database (application_id {:#x}, expected {:#x}); move it away or "
        "use another data directory",
        path, *app, kApplicationId));
  }
  if (*version > kSchemaVersion) {
    return Status::error(fmt::format(
        "{} has schema version {}, newer than this Sluice supports ({}); run a newer Sluice", path,
        *version, kSchemaVersion));
  }
  if (*version < 1) {
    return Status::error(fmt::format("{} has unknown schema version {}", path, *version));
  }
  return false;
}

// PRAGMA quick_check: O(size of the file), a few ms for thousands of routes.
Status check_intact(SqliteDb& db, const std::string& path) {
  auto statement = Statement::prepare(db.get(), "PRAGMA quick_check(5)");
  if (!statement) {
    return unreadable(db, path);
  }
  Query q(*statement);
  std::vector<std::string> problems;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    problems.push_back(q.text_at(0));
  }
  if (rc != SQLITE_DONE) {
    return unreadable(db, path);
  }
  if (problems.size() == 1 && problems[0] == "ok") {
    return Status::ok();
  }
  return Status::error(
      fmt::format("{} is corrupt ({}); restore it from a backup", path, fmt::join(problems, "; ")));
}

Status set_pragmas(SqliteDb& db, const std::string& path) {
  if (sqlite3_db_readonly(db.get(), "main") == 1) {
    return Status::error(fmt::format("{} is read-only; Sluice needs to write it", path));
  }
  const auto mode = query_text(db, "PRAGMA journal_mode = WAL");
  if (!mode) {
    return unreadable(db, path);
  }
  if (*mode != "wal") {
    return Status::error(
        fmt::format("cannot put {} in WAL journal mode (got \"{}\")", path, *mode));
  }
  // FULL: a commit fsyncs the WAL, so an acknowledged write survives power loss. Foreign keys
  // and schema-defined functions stay off: nothing here needs them. A 16 MiB page cache holds
  // some 50,000 routes, so a full list() after start does not reread the file.
  Status s = db.exec(
      "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF; PRAGMA trusted_schema = OFF; "
      "PRAGMA cache_size = -16384;");
  if (!s) {
    return Status::error(fmt::format("cannot configure {}: {}", path, s.message()));
  }
  sqlite3_busy_timeout(db.get(), 1000);  // an operator's sqlite3 shell reading it, at worst
  return Status::ok();
}

Status create_schema(SqliteDb& db, const std::string& path) {
  const std::string sql = fmt::format(
      "BEGIN IMMEDIATE; {} {} PRAGMA application_id = {}; PRAGMA user_version = {}; "
      "COMMIT;",
      kCreateSchema, kCreateHistory, kApplicationId, kSchemaVersion);
  Status s = db.exec(sql.c_str());
  if (!s) {
    (void)db.exec("ROLLBACK");
    return Status::error(fmt::format("cannot create the schema in {}: {}", path, s.message()));
  }
  return Status::ok();
}

// Version 1 -> 2: the history table, empty (rollback reaches back to the upgrade).
Status upgrade_schema(SqliteDb& db, const std::string& path) {
  const auto version = query_int(db, "PRAGMA user_version");
  if (!version) {
    return unreadable(db, path);
  }
  if (*version >= kSchemaVersion) {
    return Status::ok();
  }
  const std::string sql = fmt::format("BEGIN IMMEDIATE; {} PRAGMA user_version = {}; COMMIT;",
                                      kCreateHistory, kSchemaVersion);
  if (Status s = db.exec(sql.c_str()); !s) {
    (void)db.exec("ROLLBACK");
    return Status::error(fmt::format("cannot upgrade the schema of {}: {}", path, s.message()));
  }
  return Status::ok();
}

}  // namespace

StatusOr<SqliteDb> open_sluice_db(const std::string& path) {
  // SQLite reads a zero-length file as a new, empty database: taken as one, a truncated store
  // would start silently serving no routes. A missing file is the only way to ask for a new one.
  struct stat st;
  const bool zero_length = ::stat(path.c_str(), &st) == 0 && st.st_size == 0;
  auto db = SqliteDb::open(path);
  if (!db) {
    return db.status();
  }
  sqlite3_db_config(db->get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  // Identity first: a foreign file is refused before anything (even its journal mode) changes.
  auto fresh = check_identity(*db, path);
  if (!fresh) {
    return fresh.status();
  }
  // A zero-length file whose WAL still holds the store reads as Sluice's and opens normally.
  if (*fresh && zero_length) {
    return Status::error(fmt::format(
        "{} is empty (0 bytes): a truncated database, not a Sluice store; restore it from a "
        "backup, or remove it to start with an empty store",
        path));
  }
  if (!*fresh) {
    if (Status s = check_intact(*db, path); !s) {
      return s;
    }
  }
  if (Status s = set_pragmas(*db, path); !s) {
    return s;
  }
  if (*fresh) {
    if (Status s = create_schema(*db, path); !s) {
      return s;
    }
  } else if (Status s = upgrade_schema(*db, path); !s) {
    return s;
  }
  return db;
}

}  // namespace sluice::store
