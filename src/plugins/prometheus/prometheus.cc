#include "plugins/prometheus/prometheus.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "metrics/exposition.h"
#include "metrics/http_metrics.h"

namespace sluice::plugins::prometheus {

namespace {

// Each worker's metric cells, made once per process and kept across plugin reloads, with the
// plugin_attr they were made with (default_buckets and extra_labels are read at start).
// Thread: any (each cell is written by its worker only; read while rendering)
struct Cells {
  Attr attr;
  plugin::Json made_from;  // default_buckets and metrics as they were at start
  bool warned = false;     // about a reload that changed them
  // A route, service or global rule carries the plugin: the workers' CpuMeter times their
  // connections' events (with route_accounting); until then they pay nothing for it.
  std::atomic<bool> in_use{false};
  std::vector<std::unique_ptr<metrics::HttpMetrics>> workers;
  std::vector<const metrics::HttpMetrics*> view;
  std::vector<std::unique_ptr<WorkerCells>> slots;
};

constexpr char kCellsKey[] = "prometheus.cells";

// The part of plugin_attr.prometheus that shapes the cells.
plugin::Json layout_keys(const plugin::Json& attr) {
  plugin::Json out = plugin::Json::object();
  for (const char* key : {"default_buckets", "metrics", "route_accounting"}) {
    if (auto it = attr.find(key); it != attr.end()) {
      out[key] = *it;
    }
  }
  return out;
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  auto cells = env.shared.find<Cells>(kCellsKey);
  if (cells && !cells->warned &&
      layout_keys(env.shared.attr_of("prometheus")) != cells->made_from) {
    cells->warned = true;
    SLUICE_LOG(kWarn,
               "plugin_attr.prometheus: default_buckets and metrics are read at start; the "
               "changed values take effect at the next restart");
  }
  const bool reads_head =
      cells ? cells->attr.reads_head : read_attr(env.shared.attr_of("prometheus")).reads_head;
  if (cells) {
    cells->in_use.store(true, std::memory_order_relaxed);
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const Prometheus>(*conf, reads_head));
}

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
  auto cells = shared.get<Cells>(kCellsKey, [&shared] {
    auto made = std::make_shared<Cells>();
    made->attr = read_attr(shared.attr_of("prometheus"));
    made->made_from = layout_keys(shared.attr_of("prometheus"));
    return made;
  });
  size_t cap = max_label_sets(shared);
  while (cells->workers.size() < static_cast<size_t>(env.workers)) {
    cells->workers.push_back(std::make_unique<metrics::HttpMetrics>(cap, cells->attr.layout));
    cells->view.push_back(cells->workers.back().get());
    cells->slots.push_back(
        std::make_unique<WorkerCells>(WorkerCells{cells->workers.back().get(), &cells->attr, {}}));
  }
}

void worker_init(plugin::Shared& shared, plugin::WorkerLocal& local) {
  auto cells = shared.find<Cells>(kCellsKey);
  if (cells && static_cast<size_t>(local.worker_id) < cells->workers.size()) {
    local.set_slot(slot_tag(), cells->slots[local.worker_id].get());
    if (cells->attr.cpu) {
      local.cpu.enabled = &cells->in_use;  // the connections time their events for log()
    }
  }
}

void destroy(plugin::Shared& shared) { shared.forget(kCellsKey); }

std::string control(const plugin::Shared& shared) {
  auto cells = shared.find<Cells>(kCellsKey);
  return metrics::render_http(cells ? std::span<const metrics::HttpMetrics* const>(cells->view)
                                    : std::span<const metrics::HttpMetrics* const>());
}

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

double ms_between(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<double>(to_ns - from_ns) / 1e6 : 0;
}

}  // namespace

uint64_t cpu_time(WorkerCells::Calibration& cal, const plugin::CpuMeter& meter, uint64_t now,
                  uint64_t wall_ns) {
  if (now >= cal.next_ns) {
    const uint64_t thread = thread_cpu_ns();
    if (cal.next_ns != 0 && meter.charged > cal.charged) {
      cal.ratio = static_cast<double>(thread - cal.thread_ns) /
                  static_cast<double>(meter.charged - cal.charged);
    }
    cal.thread_ns = thread;
    cal.charged = meter.charged;
    cal.next_ns = now + kCalibrationNs;
  }
  return static_cast<uint64_t>(static_cast<double>(wall_ns) * cal.ratio);
}

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
                                        .control = control,
                                        .prefer_route = true};
  return kInfo;
}

namespace {

// Appends a length-prefixed value to ctx.stash.
void stash(std::string& out, std::string_view v) {
  const auto n = static_cast<uint32_t>(v.size());
  out.append(reinterpret_cast<const char*>(&n), sizeof(n)).append(v);
}

// The next value stash() wrote at `*at`; empty past the end (head() did not run).
std::string_view unstash(const std::string& in, size_t* at) {
  uint32_t n = 0;
  if (*at + sizeof(n) > in.size()) {
    return {};
  }
  std::memcpy(&n, in.data() + *at, sizeof(n));
  std::string_view v(in.data() + *at + sizeof(n), std::min<size_t>(n, in.size() - *at - 4));
  *at += sizeof(n) + v.size();
  return v;
}

// The extra label values of one request, by family. Values point into ctx (stash, match) or
// into `bufs`/`scratch`, valid through record().
// Thread: worker (stack-local)
struct ExtraValues {
  std::array<std::array<std::string_view, kMaxExtraLabels>, 3> values;
  std::array<size_t, 3> counts{};
  router::VarScratch scratch;
  std::array<std::array<LabelVar::Buf, kMaxExtraLabels>, 3> bufs;

  void read(const Attr& attr, const plugin::Context& ctx) {
    size_t at = 0;
    for (size_t f = 0; f < attr.vars.size(); ++f) {
      counts[f] = attr.vars[f].size();
      for (size_t i = 0; i < counts[f]; ++i) {
        const LabelVar& v = attr.vars[f][i];
        values[f][i] =
            v.reads_request_head() ? unstash(ctx.stash, &at) : v.get(ctx, &scratch, bufs[f][i]);
      }
    }
  }
  std::span<const std::string_view> of(Family f) const {
    return {values[static_cast<size_t>(f)].data(), counts[static_cast<size_t>(f)]};
  }
};

}  // namespace

// The request head is gone by the log phase: its variables are read now, in the order log()
// takes them back.
void Prometheus::head(plugin::Context& ctx) const {
  auto* w = ctx.worker != nullptr ? ctx.worker->slot<WorkerCells>(slot_tag()) : nullptr;
  if (w == nullptr) {
    return;
  }
  ctx.stash.clear();
  router::VarScratch scratch;
  LabelVar::Buf buf;
  for (const auto& family : w->attr->vars) {
    for (const LabelVar& v : family) {
      if (v.reads_request_head()) {
        stash(ctx.stash, v.get(ctx, &scratch, buf));
      }
    }
  }
}

void Prometheus::log(plugin::Context& ctx) const {
  auto* w = ctx.worker->slot<WorkerCells>(slot_tag());
  if (w == nullptr) {
    return;
  }
  metrics::HttpMetrics* m = w->metrics;
  ExtraValues extra;
  extra.read(*w->attr, ctx);
  metrics::HttpSample s;
  s.status_extra = extra.of(Family::kStatus);
  s.latency_extra = extra.of(Family::kLatency);
  s.bandwidth_extra = extra.of(Family::kBandwidth);
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
  s.now_ms = now / 1000000;
  if (plugin::CpuMeter& meter = ctx.worker->cpu; meter.on()) {
    // What the connection charged so far, and its drive's time up to here (from here on the
    // time goes to whatever the connection does next). Outside a drive (a shutdown) there
    // is no time in progress.
    s.cpu_ns = cpu_time(w->cal, meter, now, ctx.cpu_ns + (meter.running ? meter.take(now) : 0));
  }
  m->record(s);
}

}  // namespace sluice::plugins::prometheus
