// The Gateway's listening sockets: refused when another process holds a port, inherited from
// the previous Sluice at a binary upgrade, handed on to the next one (SIGUSR2), and announced
// in the log once they serve.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/inherited_fds.h"
#include "common/log.h"
#include "config/plugin_registry.h"
#include "io/socket.h"
#include "runtime/gateway.h"
#include "runtime/handover.h"
#include "store/data_dir.h"

namespace sluice::runtime {

namespace {

constexpr int kParkTimeoutMs = 2000;
constexpr int kStartWaitMs = 2000;

struct ListenerSpec {
  const config::ListenAddr* addr;
  const char* what;  // the config.yaml key, for messages
  bool admin;
  bool tls;
};

// node_listen, then apisix.ssl.listen, then the Admin API: the order of ConnLimits::listeners.
std::vector<ListenerSpec> listener_specs(const config::GatewayConfig& conf, bool admin) {
  std::vector<ListenerSpec> specs;
  for (const auto& l : conf.node_listen) {
    specs.push_back({&l, "apisix.node_listen", false, false});
  }
  if (conf.ssl.enabled) {
    for (const auto& l : conf.ssl.listen) {
      specs.push_back({&l, "apisix.ssl.listen", false, true});
    }
  }
  if (admin) {
    specs.push_back({&conf.admin.listen, "deployment.admin.admin_listen", true, conf.admin.https});
  }
  return specs;
}

// The few lines that say the gateway is up, once per start. They carry the notice label but
// are written at the default level (warn) too: without them nothing says the gateway serves.
// A stricter level (error, crit...) hides them.
void log_startup(const std::string& line) {
  if (common::log_enabled(common::LogLevel::kWarn)) {
    common::log_write(common::LogLevel::kNotice, line);
  }
}

// `0.0.0.0:9080`, `[::1]:9080`.
std::string host_port(const config::ListenAddr& a) {
  bool v6 = a.ip.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", a.ip, a.port) : fmt::format("{}:{}", a.ip, a.port);
}

// A control-thread listener (the prometheus export server, the status API): its socket from
// the previous process at a binary upgrade, else a check that no other process holds its port.
common::Status take_local_listener(bool enabled, const config::ListenAddr& at, const char* what,
                                   int* inherited_fd) {
  io::SockAddr addr;
  if (!enabled || !io::make_sockaddr(at.ip, at.port, &addr)) {
    return common::Status::ok();  // a bad address is the server's own error when it binds
  }
  std::vector<int> fds = take_inherited_listeners(addr);
  for (size_t i = 1; i < fds.size(); ++i) {
    ::close(fds[i]);
  }
  if (!fds.empty()) {
    *inherited_fd = fds[0];
  } else if (common::Status st = io::ensure_port_free(addr); !st) {
    return common::Status::error(fmt::format("{}: {}", what, st.message()));
  }
  return common::Status::ok();
}

}  // namespace

std::string Gateway::provider_description() const {
  switch (conf_.config_provider) {
    case config::ConfigProvider::kYaml:
      return fmt::format("yaml ({})", conf_.standalone_path);
    case config::ConfigProvider::kEtcd:
      return fmt::format("etcd ({}, prefix {})", fmt::join(conf_.etcd.hosts, ", "),
                         conf_.etcd.prefix);
    case config::ConfigProvider::kEmbedded:
      break;
  }
  return fmt::format("embedded (sqlite {}/{})", conf_.data_dir, store::DataDir::kDbFile);
}

// Called once the workers run: their sockets were listening since add_listeners() and the
// first configuration is published, so a client connecting now is served.
void Gateway::announce_ready() const {
  for (const auto& l : conf_.node_listen) {
    log_startup(fmt::format("listening on {} (http{})", host_port(l), l.http2 ? ", h2c" : ""));
  }
  if (conf_.ssl.enabled) {
    for (const auto& l : conf_.ssl.listen) {
      log_startup(fmt::format("listening on {} (https{})", host_port(l), l.http2 ? ", h2" : ""));
    }
  }
  if (admin_service_) {
    log_startup(fmt::format("listening on {} (admin{})", host_port(conf_.admin.listen),
                            conf_.admin.https ? ", https" : ""));
  }
  if (metrics_export_) {
    log_startup(fmt::format("listening on {} (prometheus)", host_port(conf_.prometheus.addr)));
  }
  if (status_server_) {
    log_startup(fmt::format("listening on {} (status)", host_port(conf_.status.addr)));
  }
  size_t n = current_ ? current_->routes.size() : 0;
  log_startup(fmt::format("config provider: {}, {} route{} loaded", provider_description(), n,
                          n == 1 ? "" : "s"));
}

// Every address is checked before any is bound: a refused start never joins a port at all.
common::Status Gateway::prepare_listeners() {
  auto specs = listener_specs(conf_, admin_service_ != nullptr);
  inherited_.assign(specs.size(), {});
  for (size_t li = 0; li < specs.size(); ++li) {
    io::SockAddr addr;
    if (!io::make_sockaddr(specs[li].addr->ip, specs[li].addr->port, &addr)) {
      return common::Status::error(
          fmt::format("{}: bad address {}", specs[li].what, specs[li].addr->ip));
    }
    inherited_[li] = take_inherited_listeners(addr);
    if (!inherited_[li].empty()) {
      SLUICE_LOG(kNotice, "{}:{}: took over {} listening socket(s) from the previous process",
                 specs[li].addr->ip, specs[li].addr->port, inherited_[li].size());
      continue;
    }
    if (common::Status st = io::ensure_port_free(addr); !st) {
      return common::Status::error(fmt::format("{}: {}", specs[li].what, st.message()));
    }
  }
  const config::PrometheusExport& pe = conf_.prometheus;
  if (common::Status st =
          take_local_listener(pe.enabled && config::find_plugin("prometheus") != nullptr, pe.addr,
                              "plugin_attr.prometheus.export_addr", &inherited_metrics_fd_);
      !st) {
    return st;
  }
  if (common::Status st = take_local_listener(conf_.status.enabled, conf_.status.addr,
                                              "apisix.status", &inherited_status_fd_);
      !st) {
    return st;
  }
  if (size_t n = close_untaken_inherited(); n > 0) {
    SLUICE_LOG(kWarn,
               "{} inherited socket(s) match no configured address; closed here (the "
               "previous process serves them until it exits)",
               n);
  }
  return common::Status::ok();
}

// Worker `index` of `n` takes the inherited sockets index, index + n, ...; a worker left
// without one binds its own, which joins the inherited ones' SO_REUSEPORT group.
common::Status Gateway::add_listeners(server::Worker& w, server::ConnLimits& limits, int index,
                                      int n) {
  auto specs = listener_specs(conf_, admin_service_ != nullptr);
  for (size_t li = 0; li < specs.size(); ++li) {
    const bool h2 = !specs[li].admin && specs[li].addr->http2;
    auto kind = specs[li].admin ? server::ListenerKind::kAdmin
                : h2            ? server::ListenerKind::kProxyH2
                                : server::ListenerKind::kProxy;
    std::vector<int> fds;
    for (size_t j = static_cast<size_t>(index); j < inherited_[li].size();
         j += static_cast<size_t>(n)) {
      fds.push_back(inherited_[li][j]);
    }
    if (fds.empty()) {
      io::SockAddr addr;
      io::make_sockaddr(specs[li].addr->ip, specs[li].addr->port, &addr);
      auto fd = io::listen_reuseport(addr);
      if (!fd) {
        return common::Status::error(fmt::format("{}: {}", specs[li].what, fd.status().message()));
      }
      fds.push_back(*fd);
    }
    const tls::ServerContext* tls = nullptr;
    if (specs[li].tls) {
      tls = specs[li].admin ? admin_tls_.get() : h2 ? https_h2_tls_.get() : https_tls_.get();
    }
    for (int fd : fds) {
      listen_fds_.push_back(fd);
      w.add_listener(fd, limits.listeners[li].get(), kind, tls);
    }
  }
  return common::Status::ok();
}

void Gateway::hand_over() {
  if (workers_.empty()) {
    SLUICE_LOG(kError, "SIGUSR2: not serving yet; nothing handed over");
    return;
  }
  if (successor_pid_ > 0) {
    SLUICE_LOG(kError, "SIGUSR2: already handed over to pid {}; stop this process (SIGTERM)",
               successor_pid_);
    return;
  }
  std::vector<int> fds = listen_fds_;
  for (const auto* local : {metrics_export_.get(), status_server_.get()}) {
    if (local != nullptr && local->fd() >= 0) {
      fds.push_back(local->fd());
    }
  }
  // The store's lock goes along: the successor opens the same database while this process
  // drains, and keeps the lock when this one exits.
  if (embedded() || on_etcd()) {
    if (int lock = find_open_fd(conf_.data_dir + "/" + store::DataDir::kLockFile); lock >= 0) {
      fds.push_back(lock);
    }
  }
  std::vector<io::EventLoop*> loops;
  for (auto& w : workers_) {
    loops.push_back(&w->loop());
  }
  common::StatusOr<pid_t> pid = common::Status::error("the workers did not pause");
  {
    WorkerPark park(loops, kParkTimeoutMs);  // see spawn_successor
    if (park.parked()) {
      pid = spawn_successor(argv_, fds, kStartWaitMs);
    }
  }
  if (!pid) {
    SLUICE_LOG(kError, "SIGUSR2: binary upgrade failed, still serving: {}", pid.status().message());
    return;
  }
  successor_pid_ = *pid;
  SLUICE_LOG(kNotice,
             "SIGUSR2: started {} as pid {} with {} inherited descriptor(s); send this process "
             "(pid {}) SIGTERM once it serves",
             argv_[0], *pid, fds.size(), getpid());
}

server::AdminResponse Gateway::handing_over_answer() const {
  server::AdminResponse r;
  r.status = 503;
  r.body = fmt::format(
      "{{\"error_msg\":\"this gateway is handing over to a new process (pid {}); retry\"}}\n",
      successor_pid_);
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

void Gateway::reap_successor() {
  if (successor_pid_ <= 0) {
    return;
  }
  int status = 0;
  if (waitpid(successor_pid_, &status, WNOHANG) != successor_pid_) {
    return;
  }
  SLUICE_LOG(kError,
             "the new process (pid {}) exited ({} {}) before this one was stopped: still "
             "serving, Admin API writes accepted again",
             successor_pid_, WIFEXITED(status) ? "status" : "signal",
             WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  successor_pid_ = 0;
}

}  // namespace sluice::runtime
