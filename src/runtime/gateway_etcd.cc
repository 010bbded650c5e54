// The Gateway with config_provider etcd: the Admin API writes through an EtcdStore, one
// Watcher per process follows the prefix, and the last good configuration is persisted in
// sluice.data_dir for a start while etcd is down.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
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
        apply_etcd_change(c);
      }
      etcd_revision_ = std::max(etcd_revision_, ev.revision);
    }
  }
  if (!workers_.empty()) {  // before start_workers, run() publishes the first snapshot
    publish_store_config(false);
  }
}

void Gateway::apply_etcd_change(const store::Change& c) {
  int64_t& seen = etcd_seen_[c.entry.key];
  if (c.entry.mod_revision <= seen) {
    return;  // already applied: this node's own write, come back through the watch
  }
  seen = c.entry.mod_revision;
  etcd_revision_ = std::max(etcd_revision_, c.entry.mod_revision);
  common::Status st = index_.apply(c);
  if (!st) {
    SLUICE_LOG(kError, "etcd: {} at revision {} skipped, its previous version keeps serving: {}",
               c.entry.key, c.entry.mod_revision, st.message());
    return;
  }
  if (c.deleted) {
    etcd_good_.erase(c.entry.key);
  } else {
    etcd_good_[c.entry.key] = c.entry;
  }
  dirty_ = true;
  etcd_persist_due_ = true;
}

void Gateway::resync_etcd(std::vector<store::Entry> entries, int64_t revision, const char* source) {
  std::sort(entries.begin(), entries.end(), [](const store::Entry& a, const store::Entry& b) {
    return a.create_revision != b.create_revision ? a.create_revision < b.create_revision
                                                  : a.key < b.key;
  });
  store::ConfigIndex fresh(conf_.etcd.prefix);
  std::map<std::string, store::Entry> good;
  std::unordered_map<std::string, int64_t> seen;
  size_t skipped = 0;
  for (auto& e : entries) {
    seen[e.key] = e.mod_revision;
    common::Status st = fresh.apply(store::Change{false, e});
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
  index_ = std::move(fresh);
  etcd_good_ = std::move(good);
  etcd_seen_ = std::move(seen);
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
  common::Status st = etcd::write_snapshot_file(etcd_snapshot_path(), set);
  etcd_persisted_ms_ = now;
  if (!st) {
    SLUICE_LOG(kError, "etcd: cannot persist the configuration: {}", st.message());
    return;
  }
  etcd_persist_due_ = false;
}

}  // namespace sluice::runtime
