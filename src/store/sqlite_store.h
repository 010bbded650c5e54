#pragma once
// ConfigStore kept in an embedded SQLite database, `<dir>/sluice.db`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/data_dir.h"
#include "store/sqlite_db.h"
#include "store/store.h"

namespace sluice::store {

// The SQLite ConfigStore: every write is one durable transaction (BEGIN IMMEDIATE .. COMMIT,
// fsynced) that also persists the revision it took, so revisions never repeat across restarts.
// Changes are queued only after their transaction commits.
// Thread: control
class SqliteStore final : public ConfigStore {
  struct Token {};  // only create() constructs

 public:
  // Takes over an opened, locked data directory and a connection from open_sluice_db().
  static common::StatusOr<std::unique_ptr<SqliteStore>> create(DataDir dir, SqliteDb db,
                                                               UnixClock now);
  SqliteStore(Token, DataDir dir, SqliteDb db, UnixClock now);

  int64_t revision() const override { return revision_; }
  common::StatusOr<std::optional<Entry>> get(std::string_view key) override;
  common::StatusOr<std::vector<Entry>> list(std::string_view prefix) override;
  common::StatusOr<Entry> put(std::string_view key, std::string_view value, int64_t ttl_seconds,
                              std::optional<int64_t> expect) override;
  common::StatusOr<std::optional<Entry>> remove(std::string_view key,
                                                std::optional<int64_t> expect) override;
  common::Status apply_batch(const std::vector<BatchOp>& ops) override;
  common::StatusOr<int> expire(int64_t now_unix) override;
  int64_t next_expiry() const override { return next_expiry_; }
  std::vector<Change> take_changes() override;
  common::StatusOr<std::vector<std::pair<std::string, std::optional<std::string>>>> state_at(
      int64_t revision) override;

 private:
  // Prepared once; finalized (declared after db_) before the connection closes.
  struct Statements {
    Statement get, list_range, list_from, upsert, erase, set_revision, min_expiry, expired;
    Statement begin, commit, rollback;
    Statement history_add, history_prune, history_min, history_since;
  };

  common::Status prepare_statements();
  common::Status load_revision();

  template <typename Body>
  common::Status in_transaction(Body&& body);
  // The row at `key` as stored, expired or not.
  common::StatusOr<std::optional<Entry>> read(std::string_view key);
  // The row at `key` unless it has expired by `now`.
  common::StatusOr<std::optional<Entry>> read_live(std::string_view key, int64_t now);
  common::Status write_entry(const Entry& entry);
  common::StatusOr<std::vector<Entry>> read_list(std::string_view prefix, int64_t now);
  common::Status write_revision(int64_t revision);
  common::Status erase(const std::string& key);
  // Records that `key` changed at `revision`, having held `prev` (null: absent), and forgets
  // what falls out of the kept window. Inside the change's transaction.
  common::Status remember(int64_t revision, const std::string& key, const std::string* prev);
  common::StatusOr<std::vector<Entry>> read_expired(int64_t now);
  void refresh_next_expiry();
  // "store <path>: <what>: <sqlite's message>".
  common::Status fail(std::string_view what) const;

  DataDir dir_;  // first: destroyed last, so the lock outlives the connection
  SqliteDb db_;
  Statements sql_;
  std::string db_path_;
  UnixClock now_;
  int64_t revision_ = 0;
  int64_t next_expiry_ = 0;
  std::vector<Change> changes_;
};

}  // namespace sluice::store
