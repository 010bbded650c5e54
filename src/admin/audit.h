#pragma once
// The Admin API's audit log: who (the admin key's name and role, the client's address) asked
// to change what (method and path), what came of it (status, error_msg, the store's revision)
// and each object before and after, one JSON line per request that is not a read, appended to
// a file (sluice.admin_audit_log) and listed by GET /apisix/admin/audit. Secrets in objects are
// masked, sealed or not. Writes happen on the control thread, as the Admin API's.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/gateway_config.h"
#include "server/admin_hook.h"
#include "store/store.h"

namespace sluice::admin {

// One key a request changed: what it held before and after (nullopt: absent).
struct AuditChange {
  std::string key;
  std::optional<std::string> before, after;
};

// The Admin API's store, remembering each key a request writes or deletes with its value
// before (read just before the write) and after. Reads pass through.
// Thread: control
class RecordingStore final : public store::ConfigStore {
 public:
  explicit RecordingStore(store::ConfigStore& inner) : inner_(inner) {}
  // What the writes since the last take() changed, oldest first.
  std::vector<AuditChange> take() { return std::exchange(changes_, {}); }
  // Recording costs a read before each write: off unless an audit log is kept.
  void set_recording(bool on) { recording_ = on; }

  int64_t revision() const override { return inner_.revision(); }
  common::StatusOr<std::optional<store::Entry>> get(std::string_view key) override {
    return inner_.get(key);
  }
  common::StatusOr<std::vector<store::Entry>> list(std::string_view prefix) override {
    return inner_.list(prefix);
  }
  common::StatusOr<store::Entry> put(std::string_view key, std::string_view value,
                                     int64_t ttl_seconds, std::optional<int64_t> expect) override;
  common::StatusOr<std::optional<store::Entry>> remove(std::string_view key,
                                                       std::optional<int64_t> expect) override;
  common::Status apply_batch(const std::vector<store::BatchOp>& ops) override;
  common::StatusOr<int> expire(int64_t now_unix) override { return inner_.expire(now_unix); }
  int64_t next_expiry() const override { return inner_.next_expiry(); }
  std::vector<store::Change> take_changes() override { return inner_.take_changes(); }
  common::StatusOr<int64_t> generate_id() override { return inner_.generate_id(); }

 private:
  store::ConfigStore& inner_;
  bool recording_ = false;
  std::vector<AuditChange> changes_;
};

// Thread: control
class AuditLog {
 public:
  // `path` empty: no log (records are neither written nor listed).
  explicit AuditLog(std::string path) : path_(std::move(path)) {}
  bool on() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // The record of one request; appends it as a line (opened, appended, closed: a file moved by
  // logrotate is followed at the next write). A failed write is logged, not answered.
  void record(const server::AdminRequest& req, const config::AdminKey* who,
              const server::AdminResponse& resp, int64_t revision,
              const std::vector<AuditChange>& changes, const std::string& prefix);
  // GET /apisix/admin/audit[?limit=N]: the last N records (default 100, at most 1000), oldest
  // first, as {"total": n, "list": [...]}.
  server::AdminResponse list(const server::AdminRequest& req) const;

 private:
  std::string path_;
};

}  // namespace sluice::admin
