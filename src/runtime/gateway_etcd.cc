// The Gateway with config_provider etcd: the Admin API writes through an EtcdStore, one
// Watcher per process follows the prefix, and the last good configuration is persisted in
// sluice.data_dir for a start while etcd is down.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "config/secret_fields.h"
#include "config/validate.h"
#include "etcd/snapshot_file.h"
#include "runtime/gateway.h"

namespace sluice::runtime {

namespace {

constexpr int kFirstSyncWaitMs = 3000;  // at start, how long etcd may take before the
                                        // persisted snapshot is served instead
constexpr int64_t kPersistEveryMs = 1000;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string Gateway::etcd_snapshot_path() const { return data_dir_->file("etcd-snapshot.json"); }

common::Status Gateway::open_etcd() {
  auto opts = etcd::client_options(conf_.etcd);
  if (!opts) {
    return common::Status::error("config.yaml: " + opts.status().message());
  }
  auto dir = store::DataDir::open(conf_.data_dir);
  if (!dir) {
    return dir.status();
  }
  data_dir_.emplace(std::move(dir).value());
  const std::string& prefix = conf_.etcd.prefix;
  index_ = store::ConfigIndex(prefix);
  store_ = std::make_unique<etcd::EtcdStore>(*opts, prefix);
  watcher_ = std::make_unique<etcd::Watcher>(*opts, prefix,
                                             [this] { ctl_.post([this] { on_etcd_events(); }); });
  watcher_->start();
  etcd_loaded_ = false;
  if (watcher_->wait_synced(std::min(kFirstSyncWaitMs, opts->timeout_ms))) {
    on_etcd_events();
    return common::Status::ok();
  }
  // etcd does not answer: serve what it gave last time, until it does.
  auto saved = etcd::read_snapshot_file(etcd_snapshot_path());
  if (!saved) {
    SLUICE_LOG(kError,
               "etcd: no member of {} answers and no usable persisted configuration ({}): "
               "serving no routes until etcd answers",
               fmt::join(conf_.etcd.hosts, ", "), saved.status().message());
  } else if (saved->prefix != prefix) {
    SLUICE_LOG(kError,
               "etcd: the persisted configuration is for prefix {}, not {}: not served; "
               "serving no routes until etcd answers",
               saved->prefix, prefix);
  } else {
    SLUICE_LOG(kWarn,
               "etcd: no member answers yet: serving the persisted configuration of revision "
               "{} ({} resources) until it does",
               saved->revision, saved->entries.size());
    resync_etcd(std::move(saved->entries), saved->revision, "the persisted snapshot");
    etcd_persist_due_ = false;
  }
  on_etcd_events();  // the watch may have come through meanwhile
  return common::Status::ok();
}

void Gateway::on_etcd_events() {
  if (!watcher_) {
    return;
  }
  for (auto& ev : watcher_->take()) {
    if (ev.kind == etcd::WatchEvent::Kind::kResync) {
      resync_etcd(std::move(ev.entries), ev.revision, "etcd");
    } else {
      for (const auto& c : ev.changes) {
        apply_etcd_change(c, false);
      }
      etcd_revision_ = std::max(etcd_revision_, ev.revision);
    }
  }
  if (!workers_.empty()) {  // before start_workers, run() publishes the first snapshot
    publish_store_config(false);
  }
}

void Gateway::apply_etcd_change(const store::Change& c, bool own) {
  const std::string& key = c.entry.key;
  const int64_t rev = c.entry.mod_revision;
  if (own) {
    int64_t& p = etcd_pending_[key];
    p = std::max(p, rev);
  } else if (auto p = etcd_pending_.find(key); p != etcd_pending_.end()) {
    // The watch comes in revision order; this node's own writes were applied ahead of it.
    if (rev <= p->second) {
      if (rev == p->second) {
        etcd_pending_.erase(p);  // our write, back through the watch: applied already
      }
      return;  // an older state of a key this node has written since
    }
    etcd_pending_.erase(p);
  }
  etcd_revision_ = std::max(etcd_revision_, rev);
  common::Status st = check_etcd_value(c);
  if (st) {
    st = index_.apply(c);
  }
  if (!st) {
    SLUICE_LOG(kError, "etcd: {} at revision {} skipped, its previous version keeps serving: {}",
               key, rev, st.message());
    return;
  }
  if (c.deleted) {
    etcd_good_.erase(key);
  } else {
    etcd_good_[key] = c.entry;
  }
  dirty_ = true;
  etcd_persist_due_ = true;
}

common::Status Gateway::check_etcd_value(const store::Change& c) const {
  store::KeyParts parts;
  if (c.deleted || !store::split_key(conf_.etcd.prefix, c.entry.key, &parts) ||
      !config::is_resource_kind(parts.kind)) {
    return common::Status::ok();  // ConfigIndex keeps other kinds for reference checks only
  }
  config::Json v = config::Json::parse(c.entry.value, nullptr, false);
  if (!v.is_object()) {
    return common::Status::error("the value is not a JSON object");
  }
  // What the Admin API would have refused is refused here too: anyone may write to etcd.
  // Plugin fields sealed by the Admin API (Sluice's or APISIX's) are checked opened.
  std::string_view user, cred;
  if (parts.kind == "consumers") {
    bool credential = config::split_credential_id(parts.id, &user, &cred);
    (void)config::reveal_secrets(credential ? "credentials" : "consumers", &v);
    if (credential) {
      return config::decode_credential(v).status();
    }
  }
  common::Status st = config::check_resource(parts.kind, parts.id, v);
  if (std::string note = config::clear_secrets_note(parts.kind, v); st && !note.empty()) {
    SLUICE_LOG(kWarn, "etcd: {}: {}", c.entry.key, note);  // written by a node with no keyring
  }
  return st;
}

void Gateway::resync_etcd(std::vector<store::Entry> entries, int64_t revision, const char* source) {
  etcd_loaded_ = true;
  std::sort(entries.begin(), entries.end(), [](const store::Entry& a, const store::Entry& b) {
    return a.create_revision != b.create_revision ? a.create_revision < b.create_revision
                                                  : a.key < b.key;
  });
  store::ConfigIndex fresh(conf_.etcd.prefix);
  std::map<std::string, store::Entry> good;
  size_t skipped = 0;
  for (auto& e : entries) {
    store::Change c{false, e};
    common::Status st = check_etcd_value(c);
    if (st) {
      st = fresh.apply(c);
    }
    if (st) {
      good[e.key] = std::move(e);
      continue;
    }
    ++skipped;
    auto old = etcd_good_.find(e.key);
    if (old != etcd_good_.end() && fresh.apply(store::Change{false, old->second})) {
      SLUICE_LOG(kError, "etcd: {} at revision {} skipped, its previous version keeps serving: {}",
                 e.key, e.mod_revision, st.message());
      good[e.key] = old->second;
    } else {
      SLUICE_LOG(kError, "etcd: {} at revision {} skipped: {}", e.key, e.mod_revision,
                 st.message());
    }
  }
  // This node's own writes newer than the read stay as they are: the watch brings them next.
  for (auto it = etcd_pending_.begin(); it != etcd_pending_.end();) {
    if (it->second <= revision) {
      it = etcd_pending_.erase(it);  // the read has them
      continue;
    }
    auto now = etcd_good_.find(it->first);
    if (now != etcd_good_.end()) {
      if (fresh.apply(store::Change{false, now->second})) {
        good[it->first] = now->second;
      }
    } else {
      store::Entry gone;
      gone.key = it->first;
      fresh.apply(store::Change{true, gone});
      good.erase(it->first);
    }
    ++it;
  }
  index_ = std::move(fresh);
  etcd_good_ = std::move(good);
  etcd_revision_ = revision;
  dirty_ = true;
  etcd_persist_due_ = true;
  SLUICE_LOG(kNotice, "etcd: configuration from {} at revision {}: {} resource(s), {} skipped",
             source, revision, etcd_good_.size(), skipped);
}

void Gateway::persist_etcd(bool force) {
  if (!etcd_persist_due_ || !data_dir_) {
    return;
  }
  int64_t now = steady_ms();
  if (!force && now - etcd_persisted_ms_ < kPersistEveryMs) {
    return;
  }
  etcd::PersistedSet set;
  set.prefix = conf_.etcd.prefix;
  set.revision = etcd_revision_;
  set.entries.reserve(etcd_good_.size());
  for (const auto& [key, e] : etcd_good_) {
    set.entries.push_back(e);
  }
  common::Status st;
  try {
    st = etcd::write_snapshot_file(etcd_snapshot_path(), set);
  } catch (const std::exception& e) {  // never expected: keys and values are checked UTF-8
    st = common::Status::error(e.what());
  }
  etcd_persisted_ms_ = now;
  if (!st) {
    SLUICE_LOG(kError, "etcd: cannot persist the configuration: {}", st.message());
    return;
  }
  etcd_persist_due_ = false;
}

}  // namespace sluice::runtime
