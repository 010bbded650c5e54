#pragma once
// A worker: one thread's event loop with its listeners, client connections, upstream pool,
// balancers and the snapshot it currently serves. Shared-nothing: the control thread
// talks to it only through EventLoop::post.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "accesslog/writer.h"
#include "io/event_loop.h"
#include "metrics/conn_stats.h"
#include "plugin/plugin.h"
#include "proxy/h1_upstream_request.h"
#include "proxy/h2_mux.h"
#include "proxy/pool.h"
#include "server/conn_limits.h"
#include "server/exchange.h"
#include "server/incident_log.h"
#include "server/listener.h"
#include "server/settings.h"
#include "snapshot/snapshot.h"
#include "upstream/balancer.h"

namespace sluice::server {

class ClientConn;
struct H1Message;

// Thread: worker (constructed on the control thread before the loop runs)
class Worker final : public plugin::Host {
 public:
  Worker(int id, std::shared_ptr<const Settings> settings, std::shared_ptr<ConnLimits> limits);
  ~Worker() override;

  // Before run(): where this worker records the prometheus plugin's samples (owned by the
  // caller, which also reads them; null: the plugin records nothing).
  // Connection counts for apisix_nginx_http_current_connections; read by any thread.
  const metrics::ConnStats& conn_stats() const { return stats_; }

  // Adopts a listening socket (before run()); `cap` counts its connections across workers.
  // An admin listener needs Settings::admin; without it the socket is closed and refused.
  void add_listener(int fd, ConnCounter* cap, ListenerKind kind = ListenerKind::kProxy,
                    const tls::ServerContext* tls = nullptr);
  // Runs the loop until drained or stopped.
  void run();

  // Thread: any. Swap in a new snapshot; requests in flight keep theirs.
  void publish(snapshot::SnapshotPtr snap);
  // Thread: worker (or before run()). The same, at once.
  void set_snapshot(snapshot::SnapshotPtr snap);
  // Thread: any. The version of the snapshot this worker serves new requests with; 0 before
  // its first (the status API's readiness).
  uint64_t applied_version() const { return applied_version_.load(std::memory_order_acquire); }
  // Thread: any. Stop accepting; finish in-flight requests; exit the loop when idle, or after
  // `deadline_ms` closing whatever is left.
  void drain(uint32_t deadline_ms);

  // --- used by connections (worker thread) ---
  io::EventLoop& loop() { return loop_; }
  const Settings& settings() const { return *settings_; }
  const snapshot::SnapshotPtr& snapshot() const { return snapshot_; }
  // The balancer of `up` in this worker. `up` belongs to the snapshot the request pinned; when
  // that is no longer the current one, a stand-in of the same type answers.
  upstream::Balancer& balancer(const upstream::Upstream& up);
  // Changes whenever the balancers are replaced (a new snapshot): a try that began under
  // another generation is not reported to the current balancers.
  uint64_t balancer_generation() const { return balancer_generation_; }
  proxy::Pool& pool() { return pool_; }
  bool draining() const { return draining_; }
  // While draining: milliseconds left before the deadline closes whatever is still open.
  uint32_t drain_left_ms() const;
  void accept_client(int fd, const io::SockAddr& peer, uint16_t local_port, ConnCounter* cap,
                     ListenerKind kind, const tls::ServerContext* tls = nullptr);
  // The certificates of the snapshot served now (a TLS handshake's ClientHello), or null.
  const tls::CertIndex* certs() const { return snapshot_ ? snapshot_->certs.get() : nullptr; }
  // Connections waiting for an Admin API answer, by an id unique within this worker, so an
  // answer that arrives after its connection died finds nothing and is dropped.
  uint64_t admin_wait(ClientConn* c);
  void admin_forget(uint64_t id);
  // Thread: any. Returns the `reply` callback for AdminHandler::submit (see admin_hook.h for
  // the lifetime contract): it posts the answer onto this worker's loop.
  std::function<void(AdminResponse)> admin_replier(uint64_t id);
  // Idle connections (no request in progress), oldest first: the first to go at a cap.
  void idle_add(ClientConn* c);
  void idle_remove(ClientConn* c);
  void conn_closed(ConnCounter* cap);
  void close_client(ClientConn* c);
  std::string_view http_date();  // IMF-fixdate, cached per second
  // Free lists, so a busy connection's request state and read buffer cost no allocation in
  // steady state while an idle one holds neither.
  std::unique_ptr<H1Message> take_message();
  void give_message(std::unique_ptr<H1Message> m);
  // What this worker's upstream requests share: its loop, pool and buffer sizes.
  const proxy::H1UpstreamEnv& upstream_env() const { return upstream_env_; }
  void take_buffer(io::Buffer* b);
  void give_buffer(io::Buffer* b);
  int id() const { return id_; }
  // Upstream failures, reported once per incident (incident_log.h).
  IncidentLog& incidents() { return incidents_; }

  // --- the plugins' view of this worker (plugin::Host) ---
  plugin::WorkerLocal& plugin_local() { return plugin_local_; }
  // Route chains merged with consumers' plugins (Exchange::merge_consumer).
  plugin::MergedChains& merged_chains() { return merged_chains_; }
  uint64_t suspend(plugin::Context& ctx) override;
  plugin::Context* waiting(uint64_t token) override;
  void resume(uint64_t token, plugin::Action a) override;
  void plugin_forget(uint64_t token) { plugin_waiting_.erase(token); }
  metrics::ConnStats& stats() { return stats_; }
  // Recomputes stats().reading after active, waiting or writing changed.
  void refresh_reading();

  // --- the access log ---
  // This worker's writer, or null when the access log is off.
  accesslog::Writer* access_log() { return access_log_.get(); }
  // Buffers a finished request's line; the first line buffered arms the flush timer.
  void log_access(const accesslog::Record& r);
  // Thread: any. The log file was moved (SIGUSR1, the built-in rotation): the worker writes what
  // it buffered into it, then opens the path again.
  void reopen_access_log();

 private:
  static void on_drain_deadline(void* self);
  static void on_access_log_timer(void* self);
  void maybe_finish_drain();
  bool at_cap(const ConnCounter* cap) const;
  bool make_room(const ConnCounter* cap);
  static void shed(int fd);
  void on_admin_reply(uint64_t id, AdminResponse resp);

  int id_;
  std::shared_ptr<const Settings> settings_;
  std::shared_ptr<ConnLimits> limits_;
  ClientConn* idle_head_ = nullptr;  // oldest idle
  ClientConn* idle_tail_ = nullptr;
  io::EventLoop loop_;
  snapshot::SnapshotPtr snapshot_;
  std::atomic<uint64_t> applied_version_{0};
  // By Upstream::index of snapshot_, made on first use; stray_ by BalancerType, for requests
  // still on an older snapshot.
  std::vector<std::unique_ptr<upstream::Balancer>> balancers_;
  std::unique_ptr<upstream::Balancer> stray_[4];
  uint64_t balancer_generation_ = 0;
  proxy::Pool pool_;
  proxy::H2Mux mux_{loop_, pool_};
  std::vector<std::unique_ptr<Listener>> listeners_;
  // Declared before clients_: a connection's destructor unregisters itself from it.
  std::unordered_map<uint64_t, ClientConn*> admin_waiting_;
  uint64_t next_admin_id_ = 1;  // 0 means "not waiting"
  // Requests a plugin suspended, by token (plugin::Host); same lifetime rule as admin_waiting_.
  std::unordered_map<uint64_t, Exchange*> plugin_waiting_;
  uint64_t next_plugin_token_ = 1;
  plugin::WorkerLocal plugin_local_;
  plugin::MergedChains merged_chains_;
  IncidentLog incidents_;
  metrics::ConnStats stats_;
  std::unordered_map<ClientConn*, std::unique_ptr<ClientConn>> clients_;
  bool draining_ = false;
  uint64_t drain_deadline_at_ = 0;  // loop time of the drain deadline
  io::Timer drain_timer_{&Worker::on_drain_deadline, this};
  std::vector<std::unique_ptr<H1Message>> free_messages_;
  proxy::H1UpstreamEnv upstream_env_;
  std::vector<std::unique_ptr<char[]>> free_buffers_;
  int64_t date_second_ = -1;
  char date_[40] = {0};
  // Destroyed after clients_: the requests they end are logged.
  std::unique_ptr<accesslog::Writer> access_log_;
  io::Timer access_log_timer_{&Worker::on_access_log_timer, this};
};

}  // namespace sluice::server
