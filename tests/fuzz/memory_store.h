#pragma once
// An in-memory ConfigStore for tests and fuzzing: the SQLite store's semantics (one revision
// counter, create/mod revisions, TTLs read from an injected clock, `expect` with "conflict"
// errors, bytewise-sorted prefix lists, the change feed) without a file or an fsync per write.
// Error texts follow store/sqlite_store.cc, so callers that look at them behave the same.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/store.h"

namespace sluice::fuzz {

// Thread: control (one owner; not thread-safe)
class MemoryStore final : public store::ConfigStore {
 public:
  explicit MemoryStore(store::UnixClock now) : now_(std::move(now)) {}

  int64_t revision() const override { return revision_; }

  common::StatusOr<std::optional<store::Entry>> get(std::string_view key) override {
    return live_at(key, now_());
  }

  common::StatusOr<std::vector<store::Entry>> list(std::string_view prefix) override {
    const int64_t now = now_();
    std::vector<store::Entry> out;
    // std::string compares through char_traits<char>, which orders bytes as unsigned char:
    // the same bytewise order as etcd and SQLite's BINARY collation.
    for (auto it = rows_.lower_bound(prefix); it != rows_.end() && it->first.starts_with(prefix);
         ++it) {
      if (is_live(it->second, now)) {
        out.push_back(it->second);
      }
    }
    return out;
  }

  common::StatusOr<store::Entry> put(std::string_view key, std::string_view value,
                                     int64_t ttl_seconds, std::optional<int64_t> expect) override {
    if (common::Status s = check_write(key, ttl_seconds, expect); !s) {
      return s;
    }
    const int64_t now = now_();
    const std::optional<store::Entry> existing = live_at(key, now);
    if (common::Status s = check_expect(key, existing, expect); !s) {
      return s;
    }
    const int64_t revision = revision_ + 1;
    store::Entry entry{std::string(key), std::string(value),
                       existing ? existing->create_revision : revision, revision,
                       ttl_seconds > 0 ? now + ttl_seconds : 0};
    rows_.insert_or_assign(entry.key, entry);  // an expired row is replaced: a new key
    revision_ = revision;
    changes_.push_back(store::Change{false, entry});
    return entry;
  }

  common::StatusOr<std::optional<store::Entry>> remove(std::string_view key,
                                                       std::optional<int64_t> expect) override {
    if (common::Status s = check_write(key, 0, expect); !s) {
      return s;
    }
    std::optional<store::Entry> removed = live_at(key, now_());
    if (common::Status s = check_expect(key, removed, expect); !s) {
      return s;
    }
    if (!removed) {
      return removed;  // absent (an expired row is left for expire() to report)
    }
    rows_.erase(removed->key);
    ++revision_;
    changes_.push_back(
        store::Change{true, store::Entry{removed->key, "", removed->create_revision, revision_}});
    return removed;
  }

  common::Status apply_batch(const std::vector<store::BatchOp>& ops) override {
    for (const store::BatchOp& op : ops) {  // checked whole first: all or nothing
      if (common::Status s = check_write(op.key, 0, std::nullopt); !s) {
        return s;
      }
    }
    for (const store::BatchOp& op : ops) {
      if (op.remove) {
        (void)remove(op.key, std::nullopt);
      } else {
        (void)put(op.key, op.value, 0, std::nullopt);
      }
    }
    return common::Status::ok();
  }

  common::StatusOr<int> expire(int64_t now_unix) override {
    std::vector<store::Entry> due;
    for (const auto& [key, e] : rows_) {
      if (e.expire_at > 0 && e.expire_at <= now_unix) {
        due.push_back(e);
      }
    }
    // The SQLite store deletes in (expire_at, key) order, one revision each.
    std::sort(due.begin(), due.end(), [](const store::Entry& a, const store::Entry& b) {
      return a.expire_at != b.expire_at ? a.expire_at < b.expire_at : a.key < b.key;
    });
    for (store::Entry& e : due) {
      rows_.erase(e.key);
      ++revision_;
      changes_.push_back(
          store::Change{true, store::Entry{std::move(e.key), "", e.create_revision, revision_}});
    }
    return static_cast<int>(due.size());
  }

  // Over every row, swept or not, as the SQLite store's MIN(expire_at) is.
  int64_t next_expiry() const override {
    int64_t soonest = 0;
    for (const auto& [key, e] : rows_) {
      if (e.expire_at > 0 && (soonest == 0 || e.expire_at < soonest)) {
        soonest = e.expire_at;
      }
    }
    return soonest;
  }

  std::vector<store::Change> take_changes() override { return std::exchange(changes_, {}); }

  // Every row as stored, expired but not yet swept ones included (for invariant checks).
  const std::map<std::string, store::Entry, std::less<>>& rows() const { return rows_; }

 private:
  static bool is_live(const store::Entry& e, int64_t now) {
    return e.expire_at <= 0 || e.expire_at > now;
  }

  std::optional<store::Entry> live_at(std::string_view key, int64_t now) const {
    auto it = rows_.find(key);
    if (it == rows_.end() || !is_live(it->second, now)) {
      return std::nullopt;
    }
    return it->second;
  }

  static common::Status check_write(std::string_view key, int64_t ttl_seconds,
                                    std::optional<int64_t> expect) {
    if (key.empty()) {
      return common::Status::error("the key must not be empty");
    }
    if (ttl_seconds < 0 || ttl_seconds > std::numeric_limits<int32_t>::max()) {
      return common::Status::error(
          fmt::format("ttl {} is out of range (0 to 2147483647 seconds)", ttl_seconds));
    }
    if (expect && *expect < 0) {
      return common::Status::error(
          fmt::format("expected revision {} must not be negative", *expect));
    }
    return common::Status::ok();
  }

  static common::Status check_expect(std::string_view key, const std::optional<store::Entry>& live,
                                     std::optional<int64_t> expect) {
    if (!expect) {
      return common::Status::ok();
    }
    if (*expect == 0 && live) {
      return common::Status::error(
          fmt::format("conflict: {} already exists (mod_revision {})", key, live->mod_revision));
    }
    if (*expect > 0 && !live) {
      return common::Status::error(
          fmt::format("conflict: {} does not exist (expected mod_revision {})", key, *expect));
    }
    if (*expect > 0 && live->mod_revision != *expect) {
      return common::Status::error(fmt::format("conflict: {} has mod_revision {}, expected {}", key,
                                               live->mod_revision, *expect));
    }
    return common::Status::ok();
  }

  store::UnixClock now_;
  int64_t revision_ = 0;
  std::map<std::string, store::Entry, std::less<>> rows_;
  std::vector<store::Change> changes_;
};

}  // namespace sluice::fuzz
