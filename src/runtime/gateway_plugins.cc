// The Gateway's plugin settings: the enabled set and plugin_attr (at start, SIGHUP and
// PUT /apisix/admin/plugins/reload), and the prometheus export server over the workers' cells
// and the upstreams' health (apisix_upstream_status).

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "common/log.h"
#include "config/plugin_chains.h"
#include "config/plugin_registry.h"
#include "metrics/exposition.h"
#include "plugins/builtin.h"
#include "plugins/loggers/loggers.h"
#include "plugins/public_api/api_registry.h"
#include "runtime/gateway.h"

namespace sluice::runtime {

namespace {

// apisix_upstream_status{name, ip, port}: 1 healthy, 0 unhealthy, one sample per checked node.
// Thread: control (stack-local; the samples point into `labels` and `ports`)
struct UpstreamStatus {
  explicit UpstreamStatus(std::vector<health::SetPtr> live) : sets(std::move(live)) {
    size_t n = 0;
    for (const auto& s : sets) {
      n += s->size();
    }
    ports.reserve(n);
    labels.reserve(n);
    for (const auto& s : sets) {
      for (size_t i = 0; i < s->size(); ++i) {
        const health::Target& t = s->targets()[i];
        ports.push_back(std::to_string(t.port));
        labels.push_back({{{"name", s->name()}, {"ip", t.ip}, {"port", ports.back()}}});
        samples.push_back({labels.back(), s->healthy(i) ? 1.0 : 0.0});
      }
    }
  }
  std::vector<health::SetPtr> sets;
  std::vector<std::string> ports;
  std::vector<std::array<metrics::Label, 3>> labels;
  std::vector<metrics::GaugeSample> samples;
};

}  // namespace

void Gateway::apply_plugin_settings() {
  std::vector<std::string> unknown =
      config::set_enabled_plugins(conf_.plugins_listed ? &conf_.plugins : nullptr);
  if (!unknown.empty()) {
    SLUICE_LOG(kWarn, "config.yaml: plugins: not built into Sluice, ignored: {}",
               fmt::join(unknown, ", "));
  }
  plugin_shared_.attr = conf_.plugin_attr;
  plugin_shared_.ssl_port =
      conf_.ssl.enabled && !conf_.ssl.listen.empty() ? conf_.ssl.listen.front().port : 0;
  plugin_shared_.forget(config::kChainCacheKey);  // chains are rebuilt with the new settings
}

common::Status Gateway::reload_plugins() {
  auto conf = read_gateway_config();
  if (!conf) {
    return conf.status();
  }
  conf_.plugins_listed = conf->plugins_listed;
  conf_.plugins = conf->plugins;
  conf_.plugin_attr = conf->plugin_attr;
  apply_plugin_settings();
  SLUICE_LOG(
      kNotice, "plugins reloaded: {}",
      fmt::join(conf_.plugins_listed ? conf_.plugins : std::vector<std::string>{"(all)"}, ", "));
  rebuild_now();
  return common::Status::ok();
}

// Every built-in plugin's hooks run, enabled or not: a plugin enabled later by a reload finds
// its objects made.
void Gateway::plugins_process_init(int workers) {
  register_plugin_apis();
  const plugin::ProcessEnv env{workers};
  for (const plugin::PluginInfo& p : plugins::builtin()) {
    if (p.process_init != nullptr) {
      p.process_init(plugin_shared_, env);
    }
  }
}

void Gateway::plugins_worker_init(plugin::WorkerLocal& local) {
  for (const plugin::PluginInfo& p : plugins::builtin()) {
    if (p.worker_init != nullptr) {
      p.worker_init(plugin_shared_, local);
    }
  }
}

void Gateway::plugins_destroy() {
  for (const plugin::PluginInfo& p : plugins::builtin()) {
    if (p.destroy != nullptr) {
      p.destroy(plugin_shared_);
    }
  }
}

// The plugin APIs public-api serves on a route (APISIX's router.api): prometheus's metrics
// page at its export_uri, the same page the export server answers, made on this thread.
void Gateway::register_plugin_apis() {
  auto apis = plugin_shared_.get<plugins::public_api::ApiRegistry>(
      plugins::public_api::kRegistryKey,
      [] { return std::make_shared<plugins::public_api::ApiRegistry>(); });
  apis->control = &ctl_;
  apis->apis.clear();
  apis->apis.push_back({conf_.prometheus.uri, "text/plain; version=0.0.4; charset=utf-8",
                        [this]() -> std::optional<std::string> {
                          if (config::find_plugin("prometheus") == nullptr) {
                            return std::nullopt;  // APISIX's router.api lists enabled plugins
                          }
                          return render_metrics();
                        }});
}

// The prometheus plugin's families (its control endpoint), then the gateway's own.
std::string Gateway::render_metrics() const {
  std::string out;
  if (const plugin::PluginInfo* p = config::find_plugin("prometheus", plugins::builtin());
      p != nullptr && p->control != nullptr) {
    out = p->control(plugin_shared_);
  }
  plugins::loggers::render_metrics(plugin_shared_, out);  // the loggers' batch processors
  std::vector<const metrics::ConnStats*> conns;
  for (const auto& w : workers_) {
    conns.push_back(&w->conn_stats());
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  metrics::HostInput in;
  in.conns = conns;
  in.hostname = host;
  in.version = SLUICE_VERSION;
  // The embedded store is this node's config server, and it is always reachable; the
  // standalone file has none, as in APISIX, which sets the gauge only when it uses etcd.
  // With etcd: whether this node's watch is established.
  const metrics::GaugeSample reachable[] = {{{}, watcher_ && !watcher_->reachable() ? 0.0 : 1.0}};
  UpstreamStatus upstreams(health_.live());
  std::vector<metrics::GaugeFamily> gauges;
  if (embedded()) {
    gauges.push_back({"apisix_etcd_reachable",
                      "Config server etcd reachable from APISIX, 0 is unreachable", reachable});
  }
  if (!upstreams.samples.empty()) {
    gauges.push_back(
        {"apisix_upstream_status", "Upstream status from health check", upstreams.samples});
  }
  in.gauges = gauges;
  metrics::render_host(out, in);
  return out;
}

// Started when the prometheus plugin is enabled; a port already taken is logged, not fatal:
// the gateway serves traffic without its metrics rather than not at all.
common::Status Gateway::start_metrics_export() {
  const config::PrometheusExport& pe = conf_.prometheus;
  if (!pe.enabled || config::find_plugin("prometheus") == nullptr) {
    return common::Status::ok();
  }
  metrics_export_ = std::make_unique<LocalHttp>(
      ctl_, "prometheus export server", [this, uri = pe.uri](const http::RequestHead& head) {
        if (head.path != uri) {
          return LocalHttp::Answer{404, "text/plain", "not found\n"};
        }
        if (head.method != http::Method::kGet && head.method != http::Method::kHead) {
          return LocalHttp::Answer{405, "text/plain", "method not allowed\n"};
        }
        return LocalHttp::Answer{200, "text/plain; version=0.0.4; charset=utf-8", render_metrics()};
      });
  if (inherited_metrics_fd_ >= 0) {
    metrics_export_->adopt(std::exchange(inherited_metrics_fd_, -1));
  } else if (common::Status st = metrics_export_->listen(pe.addr.ip, pe.addr.port); !st) {
    metrics_export_.reset();
    // prepare_listeners() found the port free: another process took it since.
    if (st.message().find(strerror(EADDRINUSE)) != std::string::npos) {
      return st;
    }
    SLUICE_LOG(kError, "{}; metrics are not exported", st.message());
    return common::Status::ok();
  }
  return common::Status::ok();
}

}  // namespace sluice::runtime
