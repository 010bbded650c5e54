#pragma once
// The ConfigStore the Admin API writes through when config_provider is etcd: every call is a
// request to etcd (get/list -> range, put -> put or a txn comparing mod_revision / absence,
// remove -> deleterange or a txn, ?ttl -> a lease). The store's own writes come back out of
// take_changes() at once, so the writing node serves them without waiting for its watch; the
// watch (etcd::Watcher) delivers them again, and the gateway drops what it already applied.

#include <memory>

#include "etcd/client.h"
#include "store/store.h"

namespace sluice::etcd {

// Thread: control
class EtcdStore final : public store::ConfigStore {
 public:
  EtcdStore(ClientOptions opts, std::string prefix);

  int64_t revision() const override { return revision_; }
  common::StatusOr<std::optional<store::Entry>> get(std::string_view key) override;
  common::StatusOr<std::vector<store::Entry>> list(std::string_view prefix) override;
  common::StatusOr<store::Entry> put(std::string_view key, std::string_view value,
                                     int64_t ttl_seconds, std::optional<int64_t> expect) override;
  common::StatusOr<std::optional<store::Entry>> remove(std::string_view key,
                                                       std::optional<int64_t> expect) override;
  common::Status apply_batch(const std::vector<store::BatchOp>& ops) override;
  // etcd expires leased keys itself; their deletions arrive through the watch.
  common::StatusOr<int> expire(int64_t) override { return 0; }
  int64_t next_expiry() const override { return 0; }
  std::vector<store::Change> take_changes() override;
  // Writes `<prefix>/gen_id` and answers the revision that took, as APISIX's POST does.
  common::StatusOr<int64_t> generate_id() override;

  Client& client() { return client_; }

 private:
  void saw(const Header& h);
  // One write request: `req` sent alone to `path`, or, with `expect`, as the `request` of a
  // txn guarded on the key's mod_revision (0: its absence). Returns the write's own answer
  // (the txn's first `response`); a failed guard is an error starting "conflict".
  common::StatusOr<Json> write(std::string_view key, const char* path, const char* request,
                               const char* response, Json req, std::optional<int64_t> expect,
                               Header* h);

  Client client_;
  std::string prefix_;
  int64_t revision_ = 0;
  std::vector<store::Change> changes_;
};

// A key/value from etcd as a store entry. expire_at stays 0: etcd expires leased keys itself
// (get() alone asks for a lease's remaining time, for PATCH).
store::Entry to_entry(KeyValue kv);
// APISIX's directory placeholders (`<prefix>/routes/` = "init_dir") and keys that are not
// `<prefix>/<kind>/<id>` (such as `<prefix>/gen_id`) carry no resource.
// Keys that are not valid UTF-8 are skipped too (logged): they could not be shown as JSON.
bool is_resource_key(std::string_view prefix, const KeyValue& kv);
// Strict UTF-8: no overlong forms, surrogates or code points beyond U+10FFFF.
bool valid_utf8(std::string_view s);

}  // namespace sluice::etcd
