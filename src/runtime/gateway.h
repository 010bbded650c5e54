#pragma once
// The control thread: loads config.yaml, opens the configuration source (the embedded store
// with its Admin API, or the standalone apisix.yaml), starts the workers, publishes a new
// snapshot whenever the configuration changes, and handles signals. It runs its own event
// loop: the signalfd, a 200 ms tick (file poll, DNS refresh, TTL expiry) and the Admin API
// requests the workers post to it.

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "accesslog/rotation.h"
#include "admin/api.h"
#include "config/gateway_config.h"
#include "config/resources.h"
#include "etcd/etcd_store.h"
#include "etcd/watcher.h"
#include "health/checker.h"
#include "health/registry.h"
#include "io/event_loop.h"
#include "plugin/info.h"
#include "runtime/admin_service.h"
#include "runtime/local_http.h"
#include "runtime/memory_trim.h"
#include "runtime/warning_memory.h"
#include "server/worker.h"
#include "store/config_index.h"
#include "store/data_dir.h"
#include "store/store.h"
#include "tls/context.h"
#include "upstream/resolver.h"

namespace sluice::runtime {

// Thread: control
class Gateway {
 public:
  // `argv`: the command line this process started with, for a binary upgrade (SIGUSR2).
  explicit Gateway(std::string config_path, std::vector<std::string> argv = {});
  ~Gateway();
  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();

 private:
  class SignalHandler;

  common::StatusOr<config::GatewayConfig> read_gateway_config() const;
  common::Status load_gateway_config();
  // Applies config.yaml's `plugins` and `plugin_attr` (at start, SIGHUP and plugins/reload).
  void apply_plugin_settings();
  // The built-in plugins' lifecycle hooks (plugin/info.h), on this thread.
  void plugins_process_init(int workers);
  void plugins_worker_init(plugin::WorkerLocal& local);
  void plugins_destroy();
  // PUT /apisix/admin/plugins/reload: re-reads them from config.yaml and republishes.
  common::Status reload_plugins();
  void rebuild_now();
  // Fails when its port is held by another process; other failures are logged only.
  common::Status start_metrics_export();
  std::string render_metrics() const;
  // gateway_status.cc: apisix.status, the status API for probes (/status, /status/ready).
  common::Status start_status_server();
  LocalHttp::Answer status_answer(const http::RequestHead& head) const;
  void register_plugin_apis();
  common::Status check_admin_safety() const;
  common::Status open_store();
  common::Status start_workers();
  common::Status make_tls_contexts();
  // gateway_listen.cc: the listening sockets, inherited at an upgrade or bound here after
  // checking that no other process holds the port.
  common::Status prepare_listeners();
  common::Status add_listeners(server::Worker& w, server::ConnLimits& limits, int index, int n);
  // Logs each listener and the configuration source once the workers accept (once per start).
  void announce_ready() const;
  std::string provider_description() const;
  // SIGUSR2: starts this binary again with the listening sockets and the store lock inherited.
  void hand_over();
  // While a successor runs, this process takes no Admin API writes: the successor read the
  // store when it started and would never see them (etcd: the watch would, yet one writer
  // during the overlap keeps the answers simple). A 503 sends the client to retry.
  server::AdminResponse handing_over_answer() const;
  // A successor that exited (it failed to start) is reaped and logged; writes resume.
  void reap_successor();
  // Re-reads apisix.yaml; on success publishes a new snapshot, else logs and keeps the old.
  bool reload_routes(bool at_start);
  bool routes_file_changed();
  // Store-backed modes: drains the store's change feed into the index (etcd: through
  // apply_etcd_change); publishes when `force` or dirty.
  void absorb_changes();
  // Opens the Admin API over store_ (embedded and etcd alike).
  common::Status open_admin();
  // config_provider etcd (gateway_etcd.cc): the store, the watch, the persisted snapshot.
  common::Status open_etcd();
  void on_etcd_events();
  // Applies one change: `own` for this node's Admin API writes (applied at once), else from
  // the watch, skipping what this node's own newer writes replaced. An invalid value is
  // logged and skipped; the key's previous version keeps serving.
  void apply_etcd_change(const store::Change& c, bool own);
  // The Admin API's checks, for a value read from etcd.
  common::Status check_etcd_value(const store::Change& c) const;
  // Replaces the whole index with `entries` (sorted here by create revision), atomically:
  // the new index is built aside; an invalid entry keeps its last good version.
  void resync_etcd(std::vector<store::Entry> entries, int64_t revision, const char* source);
  void persist_etcd(bool force);
  std::string etcd_snapshot_path() const;
  bool publish_store_config(bool force);
  // Runs `done` once every worker has run what was posted to it so far (AdminService's barrier).
  void after_workers(std::function<void()> done);
  void publish(snapshot::SnapshotPtr snap);
  void free_retired();
  void on_tick();
  static void tick_cb(void* self) { static_cast<Gateway*>(self)->on_tick(); }
  void on_signal(int signo);
  void on_sighup();
  // gateway_access_log.cc: the workers' access log settings (the file checked, its directory
  // made), SIGUSR1's reopen and the built-in rotation, checked on each tick.
  common::Status access_log_settings(server::Settings* settings);
  void reopen_logs();
  void rotate_access_log();
  void shutdown();
  // The configuration lives in a store with the Admin API in front: embedded or etcd.
  bool embedded() const { return conf_.config_provider != config::ConfigProvider::kYaml; }
  bool on_etcd() const { return conf_.config_provider == config::ConfigProvider::kEtcd; }

  std::string config_path_;
  std::string config_dir_;
  std::vector<std::string> argv_;
  // By listener index (node_listen..., then the admin listener): sockets inherited at start.
  std::vector<std::vector<int>> inherited_;
  std::vector<int> listen_fds_;    // every listening socket the workers hold, for hand_over()
  int inherited_metrics_fd_ = -1;  // the export server's socket, when inherited
  int inherited_status_fd_ = -1;   // the status server's, when inherited
  pid_t successor_pid_ = 0;        // the process SIGUSR2 started, until it exits
  config::GatewayConfig conf_;
  upstream::DnsCache dns_{30};
  WarningMemory build_warnings_;  // the snapshot builds' warnings, logged once per change
  io::EventLoop ctl_;
  io::Timer tick_{&Gateway::tick_cb, this};
  std::unique_ptr<SignalHandler> signals_;
  std::unique_ptr<store::ConfigStore> store_;
  store::ConfigIndex index_;
  bool dirty_ = false;
  // etcd mode: the watch, the data directory (lock + persisted snapshot), what was applied.
  std::unique_ptr<etcd::Watcher> watcher_;
  std::optional<store::DataDir> data_dir_;
  // This node's own writes not yet seen back through the watch: key -> revision.
  std::unordered_map<std::string, int64_t> etcd_pending_;
  std::map<std::string, store::Entry> etcd_good_;  // key -> the value serving now
  int64_t etcd_revision_ = 0;
  // False from an etcd node's start until etcd (or its persisted copy) gave it a configuration:
  // the empty one it serves meanwhile is not ready (/status/ready).
  bool etcd_loaded_ = true;
  bool etcd_persist_due_ = false;
  int64_t etcd_persisted_ms_ = 0;
  std::unique_ptr<admin::Api> api_;
  std::shared_ptr<AdminService> admin_service_;
  // Before workers_: their listeners and connections point at these, so they go after them.
  std::shared_ptr<tls::ServerContext> https_tls_, admin_tls_;
  std::shared_ptr<tls::ServerContext> https_h2_tls_;  // ALPN h2 too: enable_http2 listeners
  std::vector<std::unique_ptr<server::Worker>> workers_;
  // The prometheus plugin's cells, one per worker (read by the export server).
  std::unique_ptr<LocalHttp> metrics_export_;
  std::unique_ptr<LocalHttp> status_server_;  // apisix.status; null when not configured
  MemoryTrimmer trimmer_;         // returns what a burst freed (glibc keeps it in worker arenas)
  plugin::Shared plugin_shared_;  // plugin state that outlives snapshots
  health::Registry health_;       // upstream health that outlives snapshots
  std::unique_ptr<health::Checker> checker_;     // the active checks' thread
  std::unique_ptr<accesslog::Rotator> rotator_;  // sluice.access_log_rotate; null when unset
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
