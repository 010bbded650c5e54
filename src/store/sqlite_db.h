#pragma once
// Thin RAII handles over the SQLite C API: a connection, a prepared statement, and one use of a
// statement that always resets it, so no read snapshot stays open and pins the WAL.

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::store {

// An open SQLite connection, closed on destruction.
// Thread: control (one owner)
class SqliteDb {
 public:
  // Opens (creating when absent) the database file at `path` for reading and writing.
  static common::StatusOr<SqliteDb> open(const std::string& path);

  sqlite3* get() const { return db_.get(); }
  // Runs SQL that returns no rows (several statements allowed).
  common::Status exec(const char* sql);
  // The message and primary result code of the connection's last failure.
  std::string last_error() const;
  int last_code() const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  explicit SqliteDb(sqlite3* db) : db_(db) {}

  std::unique_ptr<sqlite3, Closer> db_;
};

// A statement prepared once and kept for the connection's life (which it must not outlive).
// Thread: control (owned alongside its connection)
class Statement {
 public:
  Statement() = default;
  static common::StatusOr<Statement> prepare(sqlite3* db, std::string_view sql);

  sqlite3_stmt* get() const { return stmt_.get(); }

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };

  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

// One execution of a Statement: binds parameters (1-based), steps through rows, and resets the
// statement and its bindings when it goes out of scope.
// Thread: control (a stack object)
class Query {
 public:
  explicit Query(const Statement& statement) : stmt_(statement.get()) {}
  ~Query();
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& bind_text(int index, std::string_view text);
  Query& bind_int(int index, int64_t value);
  // SQLITE_ROW, SQLITE_DONE, or the first error (a failed bind included); the connection's
  // last_error() then says why.
  int step();

  int64_t int_at(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text_at(int column) const;
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace sluice::store
