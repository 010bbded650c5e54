#include "store/sqlite_store.h"

#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <utility>

namespace sluice::store {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kRowColumns = "key, value, create_revision, mod_revision, expire_at";

// Live means not expired at `now`: expire_at is 0 (never) or still in the future.
bool is_live(const Entry& entry, int64_t now) {
  return entry.expire_at <= 0 || entry.expire_at > now;
}

// The smallest string greater than every string starting with `prefix`, for the range scan
// `key >= prefix AND key < successor` (LIKE would treat % and _ as wildcards). nullopt when no
// such bound exists (empty prefix or all 0xff bytes).
std::optional<std::string> prefix_successor(std::string_view prefix) {
  std::string bound(prefix);
  while (!bound.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(bound.back());
    if (last != 0xff) {
      ++last;
      return bound;
    }
    bound.pop_back();
  }
  return std::nullopt;
}

Entry entry_at(const Query& q) {
  return Entry{q.text_at(0), q.text_at(1), q.int_at(2), q.int_at(3), q.int_at(4)};
}

Status check_expect(std::string_view key, const std::optional<Entry>& live,
                    std::optional<int64_t> expect) {
  if (!expect) {
    return Status::ok();
  }
  if (*expect == 0 && live) {
    return Status::error(
        fmt::format("conflict: {} already exists (mod_revision {})", key, live->mod_revision));
  }
  if (*expect > 0 && !live) {
    return Status::error(
        fmt::format("conflict: {} does not exist (expected mod_revision {})", key, *expect));
  }
  if (*expect > 0 && live->mod_revision != *expect) {
    return Status::error(fmt::format("conflict: {} has mod_revision {}, expected {}", key,
                                     live->mod_revision, *expect));
  }
  return Status::ok();
}

Status check_write(std::string_view key, int64_t ttl_seconds, std::optional<int64_t> expect) {
  if (key.empty()) {
    return Status::error("the key must not be empty");
  }
  if (ttl_seconds < 0 || ttl_seconds > std::numeric_limits<int32_t>::max()) {
    return Status::error(
        fmt::format("ttl {} is out of range (0 to 2147483647 seconds)", ttl_seconds));
  }
  if (expect && *expect < 0) {
    return Status::error(fmt::format("expected revision {} must not be negative", *expect));
  }
  return Status::ok();
}

int64_t system_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

SqliteStore::SqliteStore(Token, DataDir dir, SqliteDb db, UnixClock now)
    : dir_(std::move(dir)),
      db_(std::move(db)),
      db_path_(dir_.file("sluice.db")),
      now_(now ? std::move(now) : system_now) {}

StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::create(DataDir dir, SqliteDb db,
                                                           UnixClock now) {
  auto store =
      std::make_unique<SqliteStore>(Token{}, std::move(dir), std::move(db), std::move(now));
  if (Status s = store->prepare_statements(); !s) {
    return s;
  }
  if (Status s = store->load_revision(); !s) {
    return s;
  }
  store->refresh_next_expiry();
  return store;
}

Status SqliteStore::prepare_statements() {
  const std::string select = fmt::format("SELECT {} FROM kv", kRowColumns);
  const std::string live = "(expire_at = 0 OR expire_at > ?3)";
  const std::pair<Statement Statements::*, std::string> table[] = {
      {&Statements::get, select + " WHERE key = ?1"},
      {&Statements::list_range,
       select + " WHERE key >= ?1 AND key < ?2 AND " + live + " ORDER BY key"},
      {&Statements::list_from, select + " WHERE key >= ?1 AND " + live + " ORDER BY key"},
      {&Statements::upsert, fmt::format("INSERT INTO kv ({}) VALUES (?1, ?2, ?3, ?4, ?5) "
                                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
                                        "create_revision = excluded.create_revision, "
                                        "mod_revision = excluded.mod_revision, "
                                        "expire_at = excluded.expire_at",
                                        kRowColumns)},
      {&Statements::erase, "DELETE FROM kv WHERE key = ?1"},
      {&Statements::set_revision, "UPDATE meta SET value = ?1 WHERE name = 'revision'"},
      {&Statements::min_expiry, "SELECT MIN(expire_at) FROM kv WHERE expire_at > 0"},
      {&Statements::expired, select + " WHERE expire_at > 0 AND expire_at <= ?1 "
                                      "ORDER BY expire_at, key"},
      {&Statements::history_add,
       "INSERT INTO history (revision, key, prev_value) VALUES (?1, ?2, ?3)"},
      {&Statements::history_prune, "DELETE FROM history WHERE revision <= ?1"},
      {&Statements::history_min, "SELECT MIN(revision) FROM history"},
      {&Statements::history_since,
       "SELECT key, prev_value FROM history WHERE revision > ?1 ORDER BY revision"},
      {&Statements::begin, "BEGIN IMMEDIATE"},
      {&Statements::commit, "COMMIT"},
      {&Statements::rollback, "ROLLBACK"},
  };
  for (const auto& [member, sql] : table) {
    auto statement = Statement::prepare(db_.get(), sql);
    if (!statement) {
      return Status::error(fmt::format("store {}: {}", db_path_, statement.status().message()));
    }
    sql_.*member = std::move(*statement);
  }
  return Status::ok();
}

Status SqliteStore::load_revision() {
  auto statement = Statement::prepare(db_.get(), "SELECT value FROM meta WHERE name = 'revision'");
  if (!statement) {
    return fail("cannot read the revision");
  }
  Query q(*statement);
  const int rc = q.step();
  if (rc == SQLITE_DONE) {
    return Status::error(fmt::format("{} is corrupt (no revision in table meta)", db_path_));
  }
  if (rc != SQLITE_ROW) {
    return fail("cannot read the revision");
  }
  revision_ = q.int_at(0);
  return Status::ok();
}

template <typename Body>
Status SqliteStore::in_transaction(Body&& body) {
  if (Query begin(sql_.begin); begin.step() != SQLITE_DONE) {
    return fail("cannot begin a transaction");
  }
  Status s = body();
  if (s) {
    Query commit(sql_.commit);
    if (commit.step() == SQLITE_DONE) {
      return s;
    }
    s = fail("cannot commit");
  }
  if (sqlite3_get_autocommit(db_.get()) == 0) {  // some failures end the transaction themselves
    Query rollback(sql_.rollback);
    (void)rollback.step();
  }
  return s;
}

StatusOr<std::optional<Entry>> SqliteStore::read(std::string_view key) {
  Query q(sql_.get);
  q.bind_text(1, key);
  const int rc = q.step();
  if (rc == SQLITE_ROW) {
    return std::optional<Entry>(entry_at(q));
  }
  if (rc != SQLITE_DONE) {
    return fail(fmt::format("cannot read {}", key));
  }
  return std::optional<Entry>();
}

StatusOr<std::optional<Entry>> SqliteStore::get(std::string_view key) {
  return read_live(key, now_());
}

StatusOr<std::optional<Entry>> SqliteStore::read_live(std::string_view key, int64_t now) {
  auto row = read(key);
  if (row && *row && !is_live(**row, now)) {
    // Expired but not yet swept: absent to readers, and a put makes a new key of it (with a
    // new create_revision). expire() deletes the row and reports the deletion.
    return std::optional<Entry>();
  }
  return row;
}

Status SqliteStore::write_entry(const Entry& entry) {
  Query q(sql_.upsert);
  q.bind_text(1, entry.key).bind_text(2, entry.value).bind_int(3, entry.create_revision);
  q.bind_int(4, entry.mod_revision).bind_int(5, entry.expire_at);
  if (q.step() != SQLITE_DONE) {
    return fail(fmt::format("cannot write {}", entry.key));
  }
  return Status::ok();
}

StatusOr<std::vector<Entry>> SqliteStore::list(std::string_view prefix) {
  return read_list(prefix, now_());
}

StatusOr<std::vector<Entry>> SqliteStore::read_list(std::string_view prefix, int64_t now) {
  const std::optional<std::string> bound = prefix_successor(prefix);
  Query q(bound ? sql_.list_range : sql_.list_from);
  q.bind_text(1, prefix).bind_int(3, now);
  if (bound) {
    q.bind_text(2, *bound);
  }
  std::vector<Entry> entries;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    entries.push_back(entry_at(q));
  }
  if (rc != SQLITE_DONE) {
    return fail(fmt::format("cannot list {}", prefix));
  }
  return entries;
}

StatusOr<Entry> SqliteStore::put(std::string_view key, std::string_view value, int64_t ttl_seconds,
                                 std::optional<int64_t> expect) {
  if (Status s = check_write(key, ttl_seconds, expect); !s) {
    return s;
  }
  const int64_t now = now_();
  const int64_t revision = revision_ + 1;
  Entry entry{std::string(key), std::string(value), revision, revision,
              ttl_seconds > 0 ? now + ttl_seconds : 0};
  Status s = in_transaction([&]() -> Status {
    auto existing = read_live(key, now);
    if (!existing) {
      return existing.status();
    }
    if (Status c = check_expect(key, *existing, expect); !c) {
      return c;
    }
    if (*existing) {
      entry.create_revision = (*existing)->create_revision;
    }
    if (Status h = remember(revision, entry.key, *existing ? &(*existing)->value : nullptr); !h) {
      return h;
    }
    if (Status w = write_entry(entry); !w) {
      return w;
    }
    return write_revision(revision);
  });
  if (!s) {
    return s;
  }
  revision_ = revision;
  changes_.push_back(Change{false, entry});
  refresh_next_expiry();
  return entry;
}

StatusOr<std::optional<Entry>> SqliteStore::remove(std::string_view key,
                                                   std::optional<int64_t> expect) {
  if (Status s = check_write(key, 0, expect); !s) {
    return s;
  }
  const int64_t now = now_();
  const int64_t revision = revision_ + 1;
  std::optional<Entry> removed;
  Status s = in_transaction([&]() -> Status {
    auto row = read_live(key, now);
    if (!row) {
      return row.status();
    }
    removed = std::move(*row);
    if (Status c = check_expect(key, removed, expect); !c) {
      return c;
    }
    if (!removed) {
      return Status::ok();  // absent (an expired row is left for expire() to report)
    }
    if (Status h = remember(revision, removed->key, &removed->value); !h) {
      return h;
    }
    if (Status e = erase(removed->key); !e) {
      return e;
    }
    return write_revision(revision);
  });
  if (!s) {
    return s;
  }
  if (removed) {
    revision_ = revision;
    changes_.push_back(Change{true, Entry{removed->key, "", removed->create_revision, revision}});
    refresh_next_expiry();
  }
  return removed;
}

Status SqliteStore::apply_batch(const std::vector<BatchOp>& ops) {
  for (const BatchOp& op : ops) {
    if (Status s = check_write(op.key, 0, std::nullopt); !s) {
      return s;
    }
  }
  const int64_t now = now_();
  int64_t revision = revision_;
  std::vector<Change> batch;
  Status s = in_transaction([&]() -> Status {
    for (const BatchOp& op : ops) {
      auto existing = read_live(op.key, now);
      if (!existing) {
        return existing.status();
      }
      if (op.remove) {
        if (!*existing) {
          continue;
        }
        if (Status e = erase(op.key); !e) {
          return e;
        }
        ++revision;
        if (Status h = remember(revision, op.key, &(*existing)->value); !h) {
          return h;
        }
        batch.push_back(Change{true, Entry{op.key, "", (*existing)->create_revision, revision}});
        continue;
      }
      ++revision;
      if (Status h = remember(revision, op.key, *existing ? &(*existing)->value : nullptr); !h) {
        return h;
      }
      Entry entry{op.key, op.value, *existing ? (*existing)->create_revision : revision, revision,
                  0};
      if (Status w = write_entry(entry); !w) {
        return w;
      }
      batch.push_back(Change{false, std::move(entry)});
    }
    return revision == revision_ ? Status::ok() : write_revision(revision);
  });
  if (!s) {
    return s;  // rolled back: nothing of the batch is in the file, nor in changes_
  }
  revision_ = revision;
  for (Change& c : batch) {
    changes_.push_back(std::move(c));
  }
  refresh_next_expiry();
  return Status::ok();
}

StatusOr<int> SqliteStore::expire(int64_t now_unix) {
  if (next_expiry_ == 0 || next_expiry_ > now_unix) {
    return 0;  // the cache is exact: this store is the only writer of its file
  }
  int64_t revision = revision_;
  std::vector<Change> batch;
  Status s = in_transaction([&]() -> Status {
    auto expired = read_expired(now_unix);
    if (!expired) {
      return expired.status();
    }
    for (Entry& entry : *expired) {
      if (Status e = erase(entry.key); !e) {
        return e;
      }
      ++revision;
      if (Status h = remember(revision, entry.key, &entry.value); !h) {
        return h;
      }
      batch.push_back(
          Change{true, Entry{std::move(entry.key), "", entry.create_revision, revision}});
    }
    return batch.empty() ? Status::ok() : write_revision(revision);
  });
  if (!s) {
    return s;
  }
  revision_ = revision;
  for (Change& change : batch) {
    changes_.push_back(std::move(change));
  }
  refresh_next_expiry();
  return static_cast<int>(batch.size());
}

std::vector<Change> SqliteStore::take_changes() { return std::exchange(changes_, {}); }

StatusOr<std::vector<Entry>> SqliteStore::read_expired(int64_t now) {
  Query q(sql_.expired);
  q.bind_int(1, now);
  std::vector<Entry> entries;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    entries.push_back(entry_at(q));
  }
  if (rc != SQLITE_DONE) {
    return fail("cannot find expired entries");
  }
  return entries;
}

Status SqliteStore::erase(const std::string& key) {
  Query q(sql_.erase);
  q.bind_text(1, key);
  if (q.step() != SQLITE_DONE) {
    return fail(fmt::format("cannot delete {}", key));
  }
  return Status::ok();
}

Status SqliteStore::write_revision(int64_t revision) {
  Query q(sql_.set_revision);
  q.bind_int(1, revision);
  if (q.step() != SQLITE_DONE) {
    return fail(fmt::format("cannot record revision {}", revision));
  }
  return Status::ok();
}

void SqliteStore::refresh_next_expiry() {
  Query q(sql_.min_expiry);
  // On a failed read, 1 ("due now") makes the next expire() run its real query.
  next_expiry_ = q.step() == SQLITE_ROW ? (q.is_null(0) ? 0 : q.int_at(0)) : 1;
}

Status SqliteStore::fail(std::string_view what) const {
  return Status::error(fmt::format("store {}: {}: {}", db_path_, what, db_.last_error()));
}

}  // namespace sluice::store
