#include "runtime/gateway.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "admin/auth.h"
#include "common/file.h"
#include "common/log.h"
#include "config/plugin_registry.h"
#include "config/secret_fields.h"
#include "config/snapshot_builder.h"
#include "config/standalone.h"
#include "io/socket.h"

namespace sluice::runtime {

namespace {

constexpr int kTickMs = 200;  // apisix.yaml is checked this often

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

int64_t thread_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// Secrets in the embedded store are sealed by the Admin API and `sluice config load`; one in
// clear was stored before encryption was on: it serves, and the log says how to seal it.
void warn_clear_secrets(std::string_view prefix, const store::Entry& e) {
  store::KeyParts parts;
  if (!store::split_key(prefix, e.key, &parts)) {
    return;
  }
  config::Json v = config::Json::parse(e.value, nullptr, false);
  if (std::string note = config::clear_secrets_note(parts.kind, v); !note.empty()) {
    SLUICE_LOG(kWarn, "store: {}: {}", e.key, note);
  }
}

}  // namespace

Gateway::Gateway(std::string config_path, std::vector<std::string> argv)
    : config_path_(std::move(config_path)), argv_(std::move(argv)) {
  size_t slash = config_path_.rfind('/');
  config_dir_ = slash == std::string::npos ? "." : config_path_.substr(0, slash);
}

Gateway::~Gateway() = default;

common::StatusOr<config::GatewayConfig> Gateway::read_gateway_config() const {
  std::string text;
  if (!common::read_file(config_path_, &text)) {
    return common::Status::error(fmt::format("cannot read {}: {}", config_path_, strerror(errno)));
  }
  return config::parse_gateway_config(text, config_dir_);
}

common::Status Gateway::load_gateway_config() {
  auto conf = read_gateway_config();
  if (!conf) {
    return conf.status();
  }
  conf_ = std::move(conf).value();
  common::set_log_level(conf_.error_log_level);
  for (const auto& w : conf_.warnings) {
    SLUICE_LOG(kWarn, "{}", w);
  }
  dns_.set_valid_seconds(conf_.dns_resolver_valid);
  common::Status st = check_admin_safety();
  if (st) {
    // What the decoders reveal and the Admin API seals with; like APISIX, a reload takes a new
    // keyring (keep the old keys in it to read what they sealed).
    config::set_data_encryption(conf_.data_encryption);
  }
  return st;
}

// The well-known APISIX key (CVE-2020-13945) must never guard an admin port reachable from
// other machines: refuse to start rather than serve it.
common::Status Gateway::check_admin_safety() const {
  const config::AdminConfig& a = conf_.admin;
  if (!embedded() || !a.enabled) {
    return common::Status::ok();
  }
  router::IpAddr ip;
  bool loopback = router::parse_ip(a.listen.ip, &ip) && admin::is_loopback(ip);
  for (const auto& k : a.keys) {
    if (k.key == config::kWellKnownAdminKey && !loopback) {
      return common::Status::error(fmt::format(
          "config.yaml: deployment.admin.admin_key: the well-known default key {} may not guard "
          "an admin listener on a non-loopback address ({}:{}); set your own key or listen on "
          "127.0.0.1",
          config::kWellKnownAdminKey, a.listen.ip, a.listen.port));
    }
  }
  if (a.key_required && a.keys.empty()) {
    return common::Status::error(
        "config.yaml: deployment.admin.admin_key: empty while admin_key_required is true");
  }
  if (!a.key_required) {
    SLUICE_LOG(kWarn,
               "deployment.admin.admin_key_required is false: the Admin API accepts "
               "requests without a key from allow_admin addresses");
  }
  return common::Status::ok();
}

common::Status Gateway::open_store() {
  if (on_etcd()) {
    common::Status st = open_etcd();
    return st ? open_admin() : st;
  }
  auto st = store::open_embedded(conf_.data_dir);
  if (!st) {
    return st.status();
  }
  store_ = std::move(st).value();
  auto entries = store_->list(index_.prefix() + "/");
  if (!entries) {
    return common::Status::error(
        fmt::format("{}: cannot read the store: {}", conf_.data_dir, entries.status().message()));
  }
  // Creation order decides ties between routes (the older wins), so replay it.
  std::sort(entries->begin(), entries->end(), [](const store::Entry& a, const store::Entry& b) {
    return a.create_revision < b.create_revision;
  });
  for (const auto& e : *entries) {
    common::Status applied = index_.apply(store::Change{false, e});
    if (!applied) {
      SLUICE_LOG(kError, "store: skipped: {}", applied.message());
    }
    warn_clear_secrets(index_.prefix(), e);
  }
  store_->take_changes();
  SLUICE_LOG(kNotice, "store {}: {} entries at revision {}", conf_.data_dir, entries->size(),
             store_->revision());
  return open_admin();
}

common::Status Gateway::open_admin() {
  if (!conf_.admin.enabled) {
    return common::Status::ok();
  }
  auto auth = admin::Auth::create(conf_.admin);
  if (!auth) {
    return auth.status();
  }
  api_ = std::make_unique<admin::Api>(
      std::move(auth).value(), *store_, index_, [] { return static_cast<int64_t>(time(nullptr)); },
      [this] { absorb_changes(); });
  api_->set_plugin_reload([this] { return reload_plugins(); });
  api_->set_audit_log(conf_.admin_audit_log);
  admin_service_ = std::make_shared<AdminService>(
      ctl_,
      [this](const server::AdminRequest& r) {
        return successor_pid_ > 0 && r.method != "GET" ? handing_over_answer() : api_->handle(r);
      },
      [this] { publish_store_config(false); },
      [this](std::function<void()> done) { after_workers(std::move(done)); });
  return common::Status::ok();
}

void Gateway::absorb_changes() {
  for (const auto& c : store_->take_changes()) {
    if (on_etcd()) {
      apply_etcd_change(c, true);
      continue;
    }
    common::Status st = index_.apply(c);
    if (!st) {
      SLUICE_LOG(kError, "store: change not applied: {}", st.message());
    }
    dirty_ = true;
  }
}

bool Gateway::publish_store_config(bool force) {
  if (!dirty_ && !force) {
    return true;
  }
  dirty_ = false;
  auto t0 = std::chrono::steady_clock::now();
  int64_t cpu0 = thread_cpu_us();
  auto built = config::build_snapshot(index_.set(), dns_, version_ + 1, &plugin_shared_, &health_,
                                      conf_.ssl.trusted_ca);
  if (!built) {
    SLUICE_LOG(kError, "store: configuration rejected, still serving the previous one: {}",
               built.status().message());
    return false;
  }
  build_warnings_.report("store", built->warnings);
  ++version_;
  size_t n = built->snapshot->routes.size();
  publish(std::move(built->snapshot));
  auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  SLUICE_LOG(kInfo, "configuration {} published: {} route(s), built in {} us ({} us CPU)", version_,
             n, us, thread_cpu_us() - cpu0);
  return true;
}

void Gateway::publish(snapshot::SnapshotPtr snap) {
  for (auto& w : workers_) {
    w->publish(snap);
  }
  if (current_) {
    retired_.push_back(std::move(current_));
  }
  current_ = std::move(snap);
  free_retired();
  if (checker_) {
    checker_->update(health_.live());
  }
}

// Each worker's loop runs what was posted to it in order: a post behind a publication runs once
// that worker applied it. The last worker to get there runs `done` (on its thread). A worker
// whose loop has stopped never gets there: `done` is then dropped, and the answers it held
// time out as any unanswered admin request does.
void Gateway::after_workers(std::function<void()> done) {
  if (workers_.empty()) {
    done();
    return;
  }
  auto left = std::make_shared<std::atomic<size_t>>(workers_.size());
  auto run = std::make_shared<std::function<void()>>(std::move(done));
  for (auto& w : workers_) {
    w->loop().post([left, run] {
      if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) {
        (*run)();
      }
    });
  }
}

// A snapshot of 10,000 routes takes milliseconds to destroy: that happens here, once no
// worker or request holds it, and never on a worker thread in the middle of traffic.
void Gateway::free_retired() {
  std::erase_if(retired_, [](const snapshot::SnapshotPtr& s) { return s.use_count() == 1; });
}

common::Status Gateway::start_workers() {
  auto settings = std::make_shared<server::Settings>();
  settings->header_timeout_ms = to_ms(conf_.client_header_timeout);
  settings->body_timeout_ms = to_ms(conf_.client_body_timeout);
  settings->send_timeout_ms = to_ms(conf_.send_timeout);
  settings->keepalive_timeout_ms = to_ms(conf_.keepalive_timeout);
  settings->client_max_body_size = conf_.client_max_body_size;
  settings->limits.underscores_in_headers = conf_.underscores_in_headers;
  settings->io_uring = conf_.io_uring;
  settings->show_upstream_status = conf_.show_upstream_status;
  const config::Http2Config& h2 = conf_.http2;
  settings->h2 = {h2.max_concurrent_streams, h2.initial_window_size,  h2.connection_window_size,
                  h2.max_frame_size,         h2.max_header_list_size, h2.max_requests,
                  h2.max_continuations,      h2.reset_burst,          h2.reset_rate,
                  h2.control_burst,          h2.control_rate};
  settings->worker_connections =
      conf_.worker_connections == 0 ? UINT32_MAX : conf_.worker_connections;
  auto limits = std::make_shared<server::ConnLimits>(conf_.max_connections);
  for (const auto& l : conf_.node_listen) {
    limits->listeners.push_back(std::make_unique<server::ConnCounter>(l.max_connections));
  }
  if (conf_.ssl.enabled) {
    for (const auto& l : conf_.ssl.listen) {
      limits->listeners.push_back(std::make_unique<server::ConnCounter>(l.max_connections));
    }
  }
  limits->listeners.push_back(std::make_unique<server::ConnCounter>(0));  // the admin port
  if (common::Status st = make_tls_contexts(); !st) {
    return st;
  }
  if (conf_.server_tokens) {
    settings->server_header = fmt::format("Server: sluice/{}\r\n", SLUICE_VERSION);
  }
  settings->admin = admin_service_;
  for (const auto& from : conf_.real_ip_from) {
    if (auto cidr = router::parse_cidr(from)) {  // "unix:" (no unix sockets here) is skipped
      settings->real_ip.trusted.push_back(*cidr);
    }
  }
  settings->real_ip.header = conf_.real_ip_header;
  for (char& c : settings->real_ip.header) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  settings->real_ip.recursive = conf_.real_ip_recursive;
  if (common::Status st = access_log_settings(settings.get()); !st) {
    return st;
  }
  int n = conf_.worker_processes > 0 ? conf_.worker_processes
                                     : static_cast<int>(std::thread::hardware_concurrency());
  n = std::max(n, 1);
  if (common::Status st = prepare_listeners(); !st) {
    return st;
  }
  plugins_process_init(n);
  for (int i = 0; i < n; ++i) {
    auto w = std::make_unique<server::Worker>(i, settings, limits);
    plugins_worker_init(w->plugin_local());
    common::Status st = add_listeners(*w, *limits, i, n);
    if (!st) {
      return st;
    }
    workers_.push_back(std::move(w));
  }
  SLUICE_LOG(kNotice, "{} worker(s) started", n);
  return common::Status::ok();
}

// The HTTPS listeners' context (certificates from `ssls`, chosen by SNI) and the Admin API's
// (a fixed certificate from files).
common::Status Gateway::make_tls_contexts() {
  if (conf_.ssl.enabled) {
    tls::ServerContext::Options o;
    o.protocols = conf_.ssl.protocols;
    o.ciphers = conf_.ssl.ciphers;
    o.session_tickets = conf_.ssl.session_tickets;
    o.fallback_sni = conf_.ssl.fallback_sni;
    auto ctx = tls::ServerContext::create(o);
    if (!ctx) {
      return common::Status::error("apisix.ssl: " + ctx.status().message());
    }
    https_tls_ = std::move(ctx).value();
    // Listeners with enable_http2 offer h2 in ALPN; the others keep answering http/1.1 only.
    bool h2 = false;
    for (const auto& l : conf_.ssl.listen) {
      h2 = h2 || l.http2;
    }
    if (h2) {
      o.alpn_h2 = true;
      auto h2ctx = tls::ServerContext::create(o);
      if (!h2ctx) {
        return common::Status::error("apisix.ssl: " + h2ctx.status().message());
      }
      https_h2_tls_ = std::move(h2ctx).value();
    }
  }
  if (admin_service_ && conf_.admin.https) {
    tls::ServerContext::Options o;
    o.cert_file = conf_.admin.cert;
    o.key_file = conf_.admin.key;
    o.client_ca_file = conf_.admin.client_ca;
    auto ctx = tls::ServerContext::create(o);
    if (!ctx) {
      return common::Status::error("deployment.admin.admin_api_mtls: " + ctx.status().message());
    }
    admin_tls_ = std::move(ctx).value();
  }
  return common::Status::ok();
}

// The signalfd, read on the control loop.
// Thread: control
class Gateway::SignalHandler : public io::IoHandler {
 public:
  SignalHandler(Gateway& g, int fd) : g_(g), fd_(fd) {}
  ~SignalHandler() override { close(fd_); }
  int fd() const { return fd_; }
  void on_io(uint32_t) override {
    signalfd_siginfo si;
    while (read(fd_, &si, sizeof(si)) == sizeof(si)) {
      g_.on_signal(static_cast<int>(si.ssi_signo));
    }
  }

 private:
  Gateway& g_;
  int fd_;
};

void Gateway::on_signal(int signo) {
  if (signo == SIGHUP) {
    on_sighup();
    return;
  }
  if (signo == SIGUSR2) {
    hand_over();
    return;
  }
  if (signo == SIGUSR1) {
    reopen_logs();
    return;
  }
  SLUICE_LOG(kNotice, "signal {}: shutting down gracefully", signo);
  ctl_.stop();
}

void Gateway::on_sighup() {
  SLUICE_LOG(kNotice, "SIGHUP: re-reading {}", config_path_);
  auto old_conf = conf_;
  common::Status st = load_gateway_config();
  if (!st) {
    SLUICE_LOG(kError, "config.yaml rejected, keeping the running settings: {}", st.message());
    conf_ = std::move(old_conf);
    common::set_log_level(conf_.error_log_level);
    return;
  }
  if (old_conf.worker_processes != conf_.worker_processes ||
      old_conf.node_listen.size() != conf_.node_listen.size() ||
      old_conf.config_provider != conf_.config_provider || old_conf.data_dir != conf_.data_dir ||
      old_conf.etcd != conf_.etcd || !(old_conf.ssl == conf_.ssl) ||
      old_conf.node_listen != conf_.node_listen || old_conf.http2 != conf_.http2 ||
      !(old_conf.access_log == conf_.access_log)) {
    SLUICE_LOG(kWarn,
               "worker_processes, node_listen, apisix.ssl, sluice.http2, the config provider, "
               "deployment.etcd, data_dir and access log changes take effect after a restart");
  }
  conf_.access_log = old_conf.access_log;  // the workers' writers are made at start
  // The running process keeps its provider, store and Admin API settings.
  conf_.config_provider = old_conf.config_provider;
  conf_.data_dir = old_conf.data_dir;
  conf_.etcd = old_conf.etcd;  // the watch and the index keep their prefix
  conf_.admin = old_conf.admin;
  conf_.prometheus = old_conf.prometheus;  // the export server and cells keep their settings
  conf_.ssl = old_conf.ssl;  // the HTTPS listeners and their context are made at start
  apply_plugin_settings();
  rebuild_now();
}

void Gateway::rebuild_now() {
  if (embedded()) {
    publish_store_config(true);
  } else {
    routes_file_changed();
    reload_routes(true);
  }
}

void Gateway::on_tick() {
  free_retired();
  reap_successor();
  rotate_access_log();
  trimmer_.maybe_trim(static_cast<int64_t>(ctl_.now_ms()));
  if (on_etcd()) {
    persist_etcd(false);
  }
  if (embedded()) {
    auto n = store_->next_expiry();
    if (n != 0 && n <= time(nullptr)) {
      auto expired = store_->expire(time(nullptr));
      if (!expired) {
        SLUICE_LOG(kError, "store: expiring entries failed: {}", expired.status().message());
      }
      absorb_changes();
      publish_store_config(false);
    }
  } else if (routes_file_changed()) {
    reload_routes(false);
  }
  if (dns_.refresh()) {
    if (embedded()) {
      publish_store_config(true);
    } else {
      reload_routes(true);
    }
  }
  ctl_.arm(tick_, kTickMs);
}

int Gateway::run() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGUSR2);
  sigaddset(&mask, SIGUSR1);  // reopen the access log (logrotate's postrotate)
  // Blocked before any thread starts, so every thread inherits the mask and only the
  // signalfd below sees these signals.
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();
  signals_ =
      std::make_unique<SignalHandler>(*this, signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  ctl_.add(signals_->fd(), signals_.get(), EPOLLIN);

  common::Status st = load_gateway_config();
  if (st) {
    apply_plugin_settings();
  }
  if (st && embedded()) {
    st = open_store();
  }
  if (st) {
    st = start_workers();
  }
  if (st) {
    checker_ = std::make_unique<health::Checker>(conf_.ssl.trusted_ca);
  }
  if (!st) {
    SLUICE_LOG(kEmerg, "{}", st.message());
    return 1;
  }
  if (embedded()) {
    if (!publish_store_config(true)) {
      SLUICE_LOG(kError,
                 "the stored configuration does not build: serving no routes until it "
                 "is fixed through the Admin API");
    }
  } else {
    routes_file_changed();
    if (!reload_routes(true)) {
      SLUICE_LOG(kEmerg, "cannot start without a valid {}", conf_.standalone_path);
      return 1;
    }
  }
  st = start_metrics_export();
  if (st) {
    st = start_status_server();
  }
  if (!st) {
    SLUICE_LOG(kEmerg, "{}", st.message());
    return 1;
  }
  for (auto& w : workers_) {
    threads_.emplace_back([wp = w.get()] { wp->run(); });
  }
  announce_ready();
  ctl_.update_time();
  ctl_.arm(tick_, kTickMs);
  ctl_.run();
  shutdown();
  return 0;
}

void Gateway::shutdown() {
  status_server_.reset();  // probes see a refused connection from here on, not a hang
  checker_.reset();
  if (on_etcd()) {
    watcher_.reset();
    persist_etcd(true);
  }
  for (auto& w : workers_) {
    w->drain(to_ms(conf_.graceful_shutdown_timeout));
  }
  for (auto& t : threads_) {
    t.join();
  }
  threads_.clear();
  metrics_export_.reset();
  workers_.clear();
  plugins_destroy();
  SLUICE_LOG(kNotice, "stopped");
}

}  // namespace sluice::runtime
