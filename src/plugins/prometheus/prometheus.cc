#include "plugins/prometheus/prometheus.h"

#include <vector>

#include "metrics/exposition.h"
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

// Each worker's metric cells, made once per process and kept across plugin reloads.
// Thread: any (each cell is written by its worker only; read while rendering)
struct Cells {
  std::vector<std::unique_ptr<metrics::HttpMetrics>> workers;
  std::vector<const metrics::HttpMetrics*> view;
};

constexpr char kCellsKey[] = "prometheus.cells";

// plugin_attr.prometheus.max_label_sets: label sets a worker records before it drops samples
// (checked by config.yaml's decoder).
size_t max_label_sets(const plugin::Shared& shared) {
  const plugin::Json& attr = shared.attr_of("prometheus");
  auto it = attr.find("max_label_sets");
  if (it != attr.end() && it->is_number_integer() && it->get<int64_t>() >= 0) {
    return static_cast<size_t>(it->get<int64_t>());
  }
  return kDefaultMaxLabelSets;
}

void process_init(plugin::Shared& shared, const plugin::ProcessEnv& env) {
  auto cells = shared.get<Cells>(kCellsKey, [] { return std::make_shared<Cells>(); });
  size_t cap = max_label_sets(shared);
  while (cells->workers.size() < static_cast<size_t>(env.workers)) {
    cells->workers.push_back(std::make_unique<metrics::HttpMetrics>(cap));
    cells->view.push_back(cells->workers.back().get());
  }
}

void worker_init(plugin::Shared& shared, plugin::WorkerLocal& local) {
  auto cells = shared.find<Cells>(kCellsKey);
  if (cells && static_cast<size_t>(local.worker_id) < cells->workers.size()) {
    local.set_slot(slot_tag(), cells->workers[local.worker_id].get());
  }
}

void destroy(plugin::Shared& shared) { shared.forget(kCellsKey); }

std::string control(const plugin::Shared& shared) {
  auto cells = shared.find<Cells>(kCellsKey);
  return metrics::render_http(cells ? std::span<const metrics::HttpMetrics* const>(cells->view)
                                    : std::span<const metrics::HttpMetrics* const>());
}

double ms_between(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) / 1e6 : 0;
}

}  // namespace

const void* slot_tag() {
  static const char kTag = 0;
  return &kTag;
}

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{.name = "prometheus",
                                        .priority = 500,
                                        .check = check,
                                        .make = make,
                                        .schema = kSchema,
                                        .process_init = process_init,
                                        .worker_init = worker_init,
                                        .destroy = destroy,
                                        .control = control};
  return kInfo;
}

void Prometheus::log(plugin::Context& ctx) const {
  auto* m = ctx.worker->slot<metrics::HttpMetrics>(slot_tag());
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
