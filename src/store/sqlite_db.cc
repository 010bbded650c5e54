#include "store/sqlite_db.h"

#include <fmt/format.h>

namespace sluice::store {

using common::Status;
using common::StatusOr;

StatusOr<SqliteDb> SqliteDb::open(const std::string& path) {
  sqlite3* raw = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw);  // closes `raw` on every path, including a failed open
  if (rc != SQLITE_OK) {
    const char* why = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return Status::error(fmt::format("cannot open {}: {}", path, why));
  }
  return db;
}

Status SqliteDb::exec(const char* sql) {
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Status::error(last_error());
  }
  return Status::ok();
}

std::string SqliteDb::last_error() const { return sqlite3_errmsg(db_.get()); }

int SqliteDb::last_code() const { return sqlite3_errcode(db_.get()) & 0xff; }

StatusOr<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  Statement statement;
  statement.stmt_.reset(raw);
  if (rc != SQLITE_OK || raw == nullptr) {
    return Status::error(fmt::format("cannot prepare \"{}\": {}", sql, sqlite3_errmsg(db)));
  }
  return statement;
}

Query::~Query() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Query& Query::bind_text(int index, std::string_view text) {
  const int rc =
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
  }
  return *this;
}

Query& Query::bind_int(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
  }
  return *this;
}

int Query::step() {
  if (bind_rc_ != SQLITE_OK) {
    return bind_rc_;
  }
  return sqlite3_step(stmt_);
}

std::string Query::text_at(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  const int size = sqlite3_column_bytes(stmt_, column);
  return text != nullptr ? std::string(text, static_cast<size_t>(size)) : std::string();
}

}  // namespace sluice::store
