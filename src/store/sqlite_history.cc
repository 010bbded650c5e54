// SqliteStore's history (schema 2): what each change's key held before it, kept for the last
// kHistoryRevisions changes, and the state at a kept revision read back from it (`sluice
// config rollback`).

#include <fmt/format.h>

#include <set>

#include "store/schema.h"
#include "store/sqlite_store.h"

namespace sluice::store {

using common::Status;
using common::StatusOr;

Status SqliteStore::remember(int64_t revision, const std::string& key, const std::string* prev) {
  Query q(sql_.history_add);
  q.bind_int(1, revision).bind_text(2, key);
  if (prev != nullptr) {
    q.bind_text(3, *prev);
  }  // else NULL: absent before
  if (q.step() != SQLITE_DONE) {
    return fail(fmt::format("cannot record the history of {}", key));
  }
  if (revision > kHistoryRevisions) {
    Query prune(sql_.history_prune);
    prune.bind_int(1, revision - kHistoryRevisions);
    if (prune.step() != SQLITE_DONE) {
      return fail("cannot trim the history");
    }
  }
  return Status::ok();
}

StatusOr<std::vector<std::pair<std::string, std::optional<std::string>>>> SqliteStore::state_at(
    int64_t revision) {
  std::vector<std::pair<std::string, std::optional<std::string>>> out;
  if (revision < 0 || revision > revision_) {
    return Status::error(fmt::format(
        "revision {} is not one of this store's (it is at revision {})", revision, revision_));
  }
  if (revision == revision_) {
    return out;
  }
  Query oldest(sql_.history_min);
  if (oldest.step() != SQLITE_ROW) {
    return fail("cannot read the history");
  }
  // Every change after `revision` must be there: the first kept one is revision + 1 or older.
  const int64_t first = oldest.is_null(0) ? revision_ + 1 : oldest.int_at(0);
  if (first > revision + 1) {
    return Status::error(fmt::format(
        "the store's history reaches back to revision {} only (it keeps the last {} changes, "
        "from the first write of a store made or upgraded by this version)",
        first - 1, kHistoryRevisions));
  }
  Query q(sql_.history_since);
  q.bind_int(1, revision);
  std::set<std::string> seen;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    std::string key = q.text_at(0);
    if (seen.insert(key).second) {  // the earliest change after `revision`: its state then
      out.emplace_back(std::move(key),
                       q.is_null(1) ? std::nullopt : std::optional<std::string>(q.text_at(1)));
    }
  }
  if (rc != SQLITE_DONE) {
    return fail("cannot read the history");
  }
  return out;
}

}  // namespace sluice::store
