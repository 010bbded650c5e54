#include "plugins/prometheus/prometheus.h"

#include "metrics/http_metrics.h"

namespace sluice::plugins::prometheus {

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const Prometheus>(*conf));
}

double ms_between(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) / 1e6 : 0;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"prometheus", 500, false, check, make, kSchema};
  return kInfo;
}

void Prometheus::log(plugin::Context& ctx) const {
  metrics::HttpMetrics* m = ctx.worker->http_metrics;
  if (m == nullptr) {
    return;
  }
  metrics::HttpSample s;
  s.code = ctx.status;
  bool by_name = conf_.prefer_name;
  s.labels.route = by_name && !ctx.route_name.empty() ? ctx.route_name : ctx.route_id;
  s.labels.service = by_name && !ctx.service_name.empty() ? ctx.service_name : ctx.service_id;
  s.labels.consumer = ctx.consumer;
  s.labels.node = ctx.upstream_ip;
  s.labels.matched_uri = ctx.matched_uri;
  s.labels.matched_host = ctx.matched_host;
  uint64_t now = plugin::monotonic_ns();
  s.request_ms = ms_between(ctx.start_ns, now);
  if (ctx.upstream_start_ns != 0) {
    s.upstream_ms =
        ms_between(ctx.upstream_start_ns, ctx.upstream_end_ns != 0 ? ctx.upstream_end_ns : now);
    s.apisix_ms = s.request_ms > s.upstream_ms ? s.request_ms - s.upstream_ms : 0;
  } else {
    s.apisix_ms = s.request_ms;
  }
  s.ingress_bytes = ctx.bytes_in;
  s.egress_bytes = ctx.bytes_out;
  m->record(s);
}

}  // namespace sluice::plugins::prometheus
