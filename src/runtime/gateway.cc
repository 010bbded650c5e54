#include "runtime/gateway.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "config/snapshot_builder.h"
#include "config/standalone.h"
#include "io/socket.h"

namespace sluice::runtime {

namespace {

constexpr int kTickMs = 200;  // apisix.yaml is checked this often

bool read_file(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

// Seconds to milliseconds, clamped into uint32 (a config may say 1e300 seconds).
uint32_t to_ms(double s) {
  double ms = s * 1000;
  return ms <= 0 ? 0 : ms >= 4e9 ? 4000000000u : static_cast<uint32_t>(ms);
}

// Every client connection is a descriptor: like nginx's worker_rlimit_nofile, take the
// hard limit so the connection caps, not the default soft limit of 1024, decide.
void raise_fd_limit() {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

Gateway::Gateway(std::string config_path) : config_path_(std::move(config_path)) {
  size_t slash = config_path_.rfind('/');
  config_dir_ = slash == std::string::npos ? "." : config_path_.substr(0, slash);
}

Gateway::~Gateway() = default;

common::Status Gateway::load_gateway_config() {
  std::string text;
  if (!read_file(config_path_, &text)) {
    return common::Status::error(fmt::format("cannot read {}: {}", config_path_, strerror(errno)));
  }
  auto conf = config::parse_gateway_config(text, config_dir_);
  if (!conf) {
    return conf.status();
  }
  conf_ = std::move(conf).value();
  common::set_log_level(conf_.error_log_level);
  for (const auto& w : conf_.warnings) {
    SLUICE_LOG(kWarn, "{}", w);
  }
  if (conf_.config_provider != config::ConfigProvider::kYaml) {
    return common::Status::error(
        "only the yaml config provider (standalone apisix.yaml) is available in this build; "
        "set deployment.role: data_plane and deployment.role_data_plane.config_provider: yaml");
  }
  dns_.set_valid_seconds(conf_.dns_resolver_valid);
  return common::Status::ok();
}

common::Status Gateway::start_workers() {
  auto settings = std::make_shared<server::Settings>();
  settings->header_timeout_ms = to_ms(conf_.client_header_timeout);
  settings->body_timeout_ms = to_ms(conf_.client_body_timeout);
  settings->send_timeout_ms = to_ms(conf_.send_timeout);
  settings->keepalive_timeout_ms = to_ms(conf_.keepalive_timeout);
  settings->client_max_body_size = conf_.client_max_body_size;
  settings->worker_connections =
      conf_.worker_connections == 0 ? UINT32_MAX : conf_.worker_connections;
  auto limits = std::make_shared<server::ConnLimits>(conf_.max_connections);
  for (const auto& l : conf_.node_listen) {
    limits->listeners.push_back(std::make_unique<server::ConnCounter>(l.max_connections));
  }
  if (conf_.server_tokens) {
    settings->server_header = fmt::format("Server: sluice/{}\r\n", SLUICE_VERSION);
  }
  int n = conf_.worker_processes > 0 ? conf_.worker_processes
                                     : static_cast<int>(std::thread::hardware_concurrency());
  n = std::max(n, 1);
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<server::Worker>(i, settings, limits);
    for (size_t li = 0; li < conf_.node_listen.size(); ++li) {
      const config::ListenAddr& l = conf_.node_listen[li];
      io::SockAddr addr;
      if (!io::make_sockaddr(l.ip, l.port, &addr)) {
        return common::Status::error(fmt::format("apisix.node_listen: bad address {}", l.ip));
      }
      auto fd = io::listen_reuseport(addr);
      if (!fd) {
        return fd.status();
      }
      w->add_listener(*fd, limits->listeners[li].get());
    }
    workers_.push_back(std::move(w));
  }
  for (const auto& l : conf_.node_listen) {
    SLUICE_LOG(kNotice, "listening on {}:{} with {} worker(s)", l.ip, l.port, n);
  }
  return common::Status::ok();
}

bool Gateway::routes_file_changed() {
  struct stat st;
  FileStamp now;
  if (stat(conf_.standalone_path.c_str(), &st) == 0) {
    now.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    now.size = st.st_size;
    now.inode = st.st_ino;
  }
  if (now == stamp_) {
    return false;
  }
  stamp_ = now;
  return true;
}

bool Gateway::reload_routes(bool at_start) {
  std::string text;
  if (!read_file(conf_.standalone_path, &text)) {
    SLUICE_LOG(kError, "cannot read {}: {}", conf_.standalone_path, strerror(errno));
    return false;
  }
  if (!at_start && text == last_text_) {
    return true;
  }
  auto set = config::parse_standalone(text);
  if (!set) {
    SLUICE_LOG(kError, "{}: rejected, still serving the previous configuration: {}",
               conf_.standalone_path, set.status().message());
    return false;
  }
  auto built = config::build_snapshot(*set, dns_, version_ + 1);
  if (!built) {
    SLUICE_LOG(kError, "apisix.yaml: rejected, still serving the previous configuration: {}",
               built.status().message());
    return false;
  }
  for (const auto& w : set->warnings) {
    SLUICE_LOG(kWarn, "apisix.yaml: {}", w);
  }
  for (const auto& w : built->warnings) {
    SLUICE_LOG(kWarn, "apisix.yaml: {}", w);
  }
  ++version_;
  for (auto& w : workers_) {
    w->publish(built->snapshot);
  }
  last_text_ = std::move(text);
  last_set_ = std::move(set).value();
  SLUICE_LOG(kNotice, "configuration {} loaded: {} route(s)", version_,
             built->snapshot->routes.size());
  return true;
}

void Gateway::on_sighup() {
  SLUICE_LOG(kNotice, "SIGHUP: re-reading {}", config_path_);
  auto old_listen = conf_.node_listen;
  int old_workers = conf_.worker_processes;
  common::Status st = load_gateway_config();
  if (!st) {
    SLUICE_LOG(kError, "config.yaml rejected, keeping the running settings: {}", st.message());
    return;
  }
  if (old_workers != conf_.worker_processes || old_listen.size() != conf_.node_listen.size()) {
    SLUICE_LOG(kWarn, "worker_processes and node_listen changes take effect after a restart");
  }
  routes_file_changed();
  reload_routes(true);
}

int Gateway::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  // Blocked before any thread starts, so every thread inherits the mask and only the
  // signalfd below sees these signals.
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

  common::Status st = load_gateway_config();
  if (st) {
    st = start_workers();
  }
  if (!st) {
    SLUICE_LOG(kEmerg, "{}", st.message());
    return 1;
  }
  routes_file_changed();
  if (!reload_routes(true)) {
    SLUICE_LOG(kEmerg, "cannot start without a valid {}", conf_.standalone_path);
    return 1;
  }
  for (auto& w : workers_) {
    threads_.emplace_back([wp = w.get()] { wp->run(); });
  }
  while (true) {
    pollfd p{sfd, POLLIN, 0};
    int r = poll(&p, 1, kTickMs);
    if (r > 0) {
      signalfd_siginfo si;
      if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP) {
          on_sighup();
          continue;
        }
        SLUICE_LOG(kNotice, "signal {}: shutting down gracefully", si.ssi_signo);
        break;
      }
    }
    if (routes_file_changed()) {
      reload_routes(false);
    }
    if (dns_.refresh()) {
      reload_routes(true);
    }
  }
  shutdown();
  close(sfd);
  return 0;
}

void Gateway::shutdown() {
  for (auto& w : workers_) {
    w->drain(to_ms(conf_.graceful_shutdown_timeout));
  }
  for (auto& t : threads_) {
    t.join();
  }
  threads_.clear();
  workers_.clear();
  SLUICE_LOG(kNotice, "stopped");
}

}  // namespace sluice::runtime
