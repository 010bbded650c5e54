#pragma once
// The control thread: loads config.yaml, opens the configuration source (the embedded store
// with its Admin API, or the standalone apisix.yaml), starts the workers, publishes a new
// snapshot whenever the configuration changes, and handles signals. It runs its own event
// loop: the signalfd, a 200 ms tick (file poll, DNS refresh, TTL expiry) and the Admin API
// requests the workers post to it.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "admin/api.h"
#include "config/gateway_config.h"
#include "config/resources.h"
#include "health/checker.h"
#include "health/registry.h"
#include "io/event_loop.h"
#include "metrics/http_metrics.h"
#include "plugin/info.h"
#include "runtime/admin_service.h"
#include "runtime/metrics_export.h"
#include "server/worker.h"
#include "store/config_index.h"
#include "store/store.h"
#include "upstream/resolver.h"

namespace sluice::runtime {

// Thread: control
class Gateway {
 public:
  explicit Gateway(std::string config_path);
  ~Gateway();
  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();

 private:
  class SignalHandler;

  common::StatusOr<config::GatewayConfig> read_gateway_config() const;
  common::Status load_gateway_config();
  // Applies config.yaml's `plugins` and `plugin_attr` (at start, SIGHUP and plugins/reload).
  void apply_plugin_settings();
  // PUT /apisix/admin/plugins/reload: re-reads them from config.yaml and republishes.
  common::Status reload_plugins();
  void rebuild_now();
  void start_metrics_export();
  std::string render_metrics() const;
  common::Status check_admin_safety() const;
  common::Status open_store();
  common::Status start_workers();
  common::Status add_listeners(server::Worker& w, server::ConnLimits& limits);
  // Re-reads apisix.yaml; on success publishes a new snapshot, else logs and keeps the old.
  bool reload_routes(bool at_start);
  bool routes_file_changed();
  // Embedded store: drains the change feed into the index; publishes when `force` or dirty.
  void absorb_changes();
  bool publish_store_config(bool force);
  void publish(snapshot::SnapshotPtr snap);
  void free_retired();
  void on_tick();
  static void tick_cb(void* self) { static_cast<Gateway*>(self)->on_tick(); }
  void on_signal(int signo);
  void on_sighup();
  void shutdown();
  bool embedded() const { return conf_.config_provider == config::ConfigProvider::kEmbedded; }

  std::string config_path_;
  std::string config_dir_;
  config::GatewayConfig conf_;
  upstream::DnsCache dns_{30};
  io::EventLoop ctl_;
  io::Timer tick_{&Gateway::tick_cb, this};
  std::unique_ptr<SignalHandler> signals_;
  std::unique_ptr<store::ConfigStore> store_;
  store::ConfigIndex index_;
  bool dirty_ = false;
  std::unique_ptr<admin::Api> api_;
  std::shared_ptr<AdminService> admin_service_;
  std::vector<std::unique_ptr<server::Worker>> workers_;
  // The prometheus plugin's cells, one per worker (read by the export server).
  std::vector<std::unique_ptr<metrics::HttpMetrics>> http_metrics_;
  std::unique_ptr<MetricsExport> metrics_export_;
  plugin::Shared plugin_shared_;              // plugin state that outlives snapshots
  health::Registry health_;                   // upstream health that outlives snapshots
  std::unique_ptr<health::Checker> checker_;  // the active checks' thread
  std::vector<std::thread> threads_;
  uint64_t version_ = 0;
  snapshot::SnapshotPtr current_;               // the newest published snapshot
  std::vector<snapshot::SnapshotPtr> retired_;  // older ones, until no worker holds them
  std::string last_text_;
  struct FileStamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    uint64_t inode = 0;
    bool operator==(const FileStamp&) const = default;
  } stamp_;
};

}  // namespace sluice::runtime
