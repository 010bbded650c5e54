#pragma once
// The configuration store: APISIX resources as JSON text under etcd-style keys
// (`/apisix/routes/1`). Every write gets the next value of one monotonically increasing
// revision; an entry remembers the revision that created it and the one that last changed it
// (the Admin API's createdIndex / modifiedIndex). Writes made through the store, and expiries,
// come back out of take_changes() in revision order: that feed drives the snapshot rebuild.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::store {

// Thread: any (value type)
struct Entry {
  std::string key;    // "/apisix/routes/1"
  std::string value;  // JSON text; empty in a delete Change
  int64_t create_revision = 0;
  int64_t mod_revision = 0;  // for a delete Change: the revision of the delete
  int64_t expire_at = 0;     // Unix seconds after which the entry is gone; 0 = never
};

// Thread: any (value type)
struct Change {
  bool deleted = false;
  Entry entry;
};

// One write of a batch: a put of `value` at `key` (no TTL), or a delete of `key`.
// Thread: any (value type)
struct BatchOp {
  std::string key;
  std::string value;
  bool remove = false;
};

// Thread: control (one owner; not thread-safe)
class ConfigStore {
 public:
  virtual ~ConfigStore() = default;

  // The newest revision handed out (0 for an empty, never-written store).
  virtual int64_t revision() const = 0;
  // The entry at `key`, or nullopt when absent or expired.
  virtual common::StatusOr<std::optional<Entry>> get(std::string_view key) = 0;
  // Every live entry whose key starts with `prefix`, sorted by key (bytewise, as etcd does).
  virtual common::StatusOr<std::vector<Entry>> list(std::string_view prefix) = 0;
  // Writes `value` at `key` in one transaction. `ttl_seconds` > 0 makes the entry expire
  // that many seconds from now; 0 means never (and clears an earlier TTL). `expect`:
  // nullopt writes unconditionally; 0 requires the key to be absent; n > 0 requires the
  // key's mod_revision to be n. A failed expectation returns an error starting "conflict".
  // On success returns the stored entry (create_revision kept when the key existed).
  virtual common::StatusOr<Entry> put(std::string_view key, std::string_view value,
                                      int64_t ttl_seconds, std::optional<int64_t> expect) = 0;
  // Deletes `key` (with the same `expect` rule). Returns the deleted entry as it was, or
  // nullopt when the key was absent.
  virtual common::StatusOr<std::optional<Entry>> remove(std::string_view key,
                                                        std::optional<int64_t> expect) = 0;
  // Applies every op in one transaction: all of them, or (on any failure) none. A key may
  // appear once. The embedded store gives each op the next revision; etcd one revision for all
  // (one Txn, bounded by etcd's --max-txn-ops, 128 by default: a larger batch is refused by
  // etcd whole). Deleting an absent key is no error and no change.
  virtual common::Status apply_batch(const std::vector<BatchOp>& ops) = 0;
  // Deletes every entry whose expire_at is in (0, now_unix]; each deletion takes a revision
  // and becomes a Change. Returns how many were deleted.
  virtual common::StatusOr<int> expire(int64_t now_unix) = 0;
  // The soonest expire_at among live entries, or 0 when none expires.
  virtual int64_t next_expiry() const = 0;
  // The changes since the last call, in revision order.
  virtual std::vector<Change> take_changes() = 0;
  // The number a POST turns into a generated id ("%020d"), as APISIX takes it: the embedded
  // store answers the next revision; etcd writes `<prefix>/gen_id` and answers its revision.
  virtual common::StatusOr<int64_t> generate_id() { return revision() + 1; }
  // What every key changed after `revision` held at `revision` (nullopt: it did not exist),
  // read from the store's history; refused when the history does not reach back that far, or
  // the store keeps none here (etcd).
  virtual common::StatusOr<std::vector<std::pair<std::string, std::optional<std::string>>>>
  state_at(int64_t revision) {
    return common::Status::error("this store keeps no history to roll back with");
  }
};

// Opens (creating when absent) the embedded SQLite store `<dir>/sluice.db`, creating `dir`
// (one level) when missing. Refuses, with a message naming the file, a database that is not
// Sluice's or is corrupt.
common::StatusOr<std::unique_ptr<ConfigStore>> open_embedded(const std::string& dir);

// Unix seconds, read for TTLs and for hiding expired entries.
using UnixClock = std::function<int64_t()>;
// open_embedded with the clock injected, so TTL tests step time instead of sleeping.
common::StatusOr<std::unique_ptr<ConfigStore>> open_embedded_with_clock(const std::string& dir,
                                                                        UnixClock now);

}  // namespace sluice::store
