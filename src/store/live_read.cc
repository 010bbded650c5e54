#include "store/live_read.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>

#include "store/data_dir.h"
#include "store/schema.h"
#include "store/sqlite_db.h"

namespace sluice::store {

namespace {

using common::Status;
using common::StatusOr;

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, Closer>;

// A waiting writer holds its lock for one commit; a reader waits at most this long for it.
constexpr int kBusyMs = 5000;

StatusOr<int64_t> one_int(sqlite3* db, const char* sql) {
  auto st = Statement::prepare(db, sql);
  if (!st) {
    return st.status();
  }
  Query q(*st);
  if (q.step() != SQLITE_ROW) {
    return Status::error(sqlite3_errmsg(db));
  }
  return q.int_at(0);
}

}  // namespace

StatusOr<LiveCopy> read_live_copy(const std::string& dir, int64_t now_unix) {
  const std::string path = dir + "/" + DataDir::kDbFile;
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    return Status::error(fmt::format("cannot open {}: {}", path,
                                     raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(raw, kBusyMs);
  auto fail = [&](std::string_view what) {
    return Status::error(fmt::format("{}: {}: {}", path, what, sqlite3_errmsg(raw)));
  };
  // BEGIN alone takes no snapshot; the first read does, and every later one sees the same.
  if (sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return fail("cannot begin a read");
  }
  auto app = one_int(raw, "PRAGMA application_id");
  auto version = app ? one_int(raw, "PRAGMA user_version") : StatusOr<int64_t>(app.status());
  if (!app || !version) {
    return fail("cannot read");
  }
  if (*app != kApplicationId || *version > kSchemaVersion) {
    return Status::error(
        fmt::format("{} is not a Sluice database of this version (application_id {:#x}, schema {})",
                    path, *app, *version));
  }
  LiveCopy copy;
  auto revision = one_int(raw, "SELECT value FROM meta WHERE name = 'revision'");
  if (!revision) {
    return fail("cannot read the revision");
  }
  copy.revision = *revision;
  auto st =
      Statement::prepare(raw,
                         "SELECT key, value, create_revision, mod_revision, expire_at FROM kv "
                         "WHERE expire_at = 0 OR expire_at > ?1 ORDER BY key");
  if (!st) {
    return st.status();
  }
  Query q(*st);
  q.bind_int(1, now_unix);
  int step;
  while ((step = q.step()) == SQLITE_ROW) {
    copy.entries.push_back(
        Entry{q.text_at(0), q.text_at(1), q.int_at(2), q.int_at(3), q.int_at(4)});
  }
  if (step != SQLITE_DONE) {
    return fail("cannot read the entries");
  }
  (void)sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  return copy;
}

}  // namespace sluice::store
