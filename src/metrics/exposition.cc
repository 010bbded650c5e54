#include "metrics/exposition.h"

#include <time.h>

#include <array>
#include <map>
#include <vector>

#include "common/strings.h"
#include "metrics/text_format.h"

namespace sluice::metrics {
namespace {

using common::append_uint;

// A latency label set summed over workers: per type, per-bucket counts and the sum.
struct LatencyTotals {
  std::array<std::vector<uint64_t>, kLatencyTypeNames.size()> buckets;
  std::array<double, kLatencyTypeNames.size()> sums{};
};
struct BandwidthTotals {
  uint64_t ingress = 0, egress = 0;
};
// Sluice's accounting per route="..",service="..",consumer="..".
struct AccountTotals {
  uint64_t cpu_ns = 0, ingress = 0, egress = 0;
};

// Keyed by the series' own label text: it lives as long as the workers, which outlive render.
// Route sets that differ only in one family's extra labels sum into the other's line.
using StatusTotals = std::map<std::string_view, uint64_t>;
struct RouteTotalsMap {
  std::map<std::string_view, LatencyTotals> latency;
  std::map<std::string_view, BandwidthTotals> bandwidth;
  std::map<std::string_view, AccountTotals> account;
  std::span<const double> bounds;  // the workers' layout (kLatencyBounds when none)
  bool cpu = false;                // the workers measure CPU time
};

// Holds every worker's ReadGuard while a scrape walks their lists and keeps views of labels.
// Thread: any (the scraping one)
class Reading {
 public:
  explicit Reading(std::span<const HttpMetrics* const> workers) : workers_(workers) {
    for (const HttpMetrics* w : workers_) {
      w->guard().begin();
    }
  }
  ~Reading() {
    for (const HttpMetrics* w : workers_) {
      w->guard().end();
    }
  }
  Reading(const Reading&) = delete;
  Reading& operator=(const Reading&) = delete;

 private:
  std::span<const HttpMetrics* const> workers_;
};

// A label set not recorded for the layout's expire_ms is left out, as if already retired.
template <typename S>
bool shown(const S& s, const HttpMetrics& w, uint64_t now_ms) {
  return !s.touched.idle(now_ms, w.layout().expire_ms);
}

void family_head(std::string& out, std::string_view name, std::string_view help,
                 std::string_view type) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

StatusTotals sum_status(std::span<const HttpMetrics* const> workers, uint64_t now_ms) {
  StatusTotals totals;
  for (const HttpMetrics* w : workers) {
    for (const StatusSeries* s = w->status_head(); s != nullptr;
         s = SeriesIndex<StatusSeries>::next_of(s)) {
      if (shown(*s, *w, now_ms)) {
        totals[s->labels] += s->count.value();
      }
    }
  }
  return totals;
}

RouteTotalsMap sum_routes(std::span<const HttpMetrics* const> workers, uint64_t now_ms) {
  RouteTotalsMap totals;
  totals.bounds = workers.empty() ? std::span<const double>(kLatencyBounds)
                                  : std::span<const double>(workers[0]->layout().bounds);
  totals.cpu = !workers.empty() && workers[0]->layout().cpu;
  const size_t cells = totals.bounds.size() + 1;
  for (const HttpMetrics* w : workers) {
    for (const RouteSeries* r = w->route_head(); r != nullptr;
         r = SeriesIndex<RouteSeries>::next_of(r)) {
      if (!shown(*r, *w, now_ms)) {
        continue;
      }
      LatencyTotals& t = totals.latency[r->labels];
      for (size_t type = 0; type < kLatencyTypeNames.size(); ++type) {
        t.buckets[type].resize(cells);
        for (size_t b = 0; b < cells; ++b) {
          t.buckets[type][b] += r->latency[type].buckets[b].value();
        }
        t.sums[type] += r->latency[type].sum.value();
      }
      BandwidthTotals& bw = totals.bandwidth[r->bandwidth_labels];
      bw.ingress += r->ingress_bytes.value();
      bw.egress += r->egress_bytes.value();
      AccountTotals& a = totals.account[r->account_labels];
      a.cpu_ns += r->cpu_ns.value();
      a.ingress += r->ingress_bytes.value();
      a.egress += r->egress_bytes.value();
    }
  }
  return totals;
}

void render_status(std::string& out, const StatusTotals& totals) {
  family_head(out, "apisix_http_status", "HTTP status codes per service in APISIX", "counter");
  for (const auto& [labels, count] : totals) {
    out.append("apisix_http_status{").append(labels).append("} ");
    append_uint(out, count);
    out.push_back('\n');
  }
}

// The _bucket, _sum and _count lines of one histogram; `labels` ends with a comma.
void render_histogram(std::string& out, std::string_view labels, std::span<const double> bounds,
                      const std::vector<uint64_t>& buckets, double sum) {
  uint64_t cumulative = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    cumulative += buckets[b];
    out.append("apisix_http_latency_bucket{").append(labels).append("le=\"");
    if (b < bounds.size()) {
      append_double(out, bounds[b]);
    } else {
      out.append("+Inf");
    }
    out.append("\"} ");
    append_uint(out, cumulative);
    out.push_back('\n');
  }
  labels.remove_suffix(1);
  out.append("apisix_http_latency_sum{").append(labels).append("} ");
  append_double(out, sum);
  out.append("\napisix_http_latency_count{").append(labels).append("} ");
  append_uint(out, cumulative);
  out.push_back('\n');
}

void render_latency(std::string& out, const RouteTotalsMap& totals) {
  family_head(out, "apisix_http_latency",
              "HTTP request latency in milliseconds per service in APISIX", "histogram");
  std::string labels;
  for (const auto& [route_labels, t] : totals.latency) {
    for (size_t type = 0; type < kLatencyTypeNames.size(); ++type) {
      uint64_t count = 0;
      for (uint64_t n : t.buckets[type]) {
        count += n;
      }
      if (count == 0) {
        continue;  // `upstream` where no request reached one
      }
      labels.clear();
      append_label(labels, "type", kLatencyTypeNames[type]);
      labels.append(",").append(route_labels).append(",");
      render_histogram(out, labels, totals.bounds, t.buckets[type], t.sums[type]);
    }
  }
}

void render_bandwidth(std::string& out, const RouteTotalsMap& totals) {
  family_head(out, "apisix_bandwidth", "Total bandwidth in bytes consumed per service in APISIX",
              "counter");
  for (const auto& [labels, t] : totals.bandwidth) {
    out.append("apisix_bandwidth{type=\"ingress\",").append(labels).append("} ");
    append_uint(out, t.ingress);
    out.append("\napisix_bandwidth{type=\"egress\",").append(labels).append("} ");
    append_uint(out, t.egress);
    out.push_back('\n');
  }
}

// Sluice's own: the worker's time and the bytes per route, service and consumer.
void render_account(std::string& out, const RouteTotalsMap& totals) {
  if (totals.cpu) {
    family_head(out, "sluice_route_cpu_seconds_total",
                "Worker CPU time spent on the requests of each route, service and consumer "
                "(Sluice only)",
                "counter");
    for (const auto& [labels, t] : totals.account) {
      out.append("sluice_route_cpu_seconds_total{").append(labels).append("} ");
      append_double(out, static_cast<double>(t.cpu_ns) / 1e9);
      out.push_back('\n');
    }
  }
  family_head(out, "sluice_route_bytes_total",
              "Bytes from the client (ingress) and to the client (egress) per route, service "
              "and consumer (Sluice only)",
              "counter");
  for (const auto& [labels, t] : totals.account) {
    out.append("sluice_route_bytes_total{").append(labels).append(",direction=\"ingress\"} ");
    append_uint(out, t.ingress);
    out.append("\nsluice_route_bytes_total{").append(labels).append(",direction=\"egress\"} ");
    append_uint(out, t.egress);
    out.push_back('\n');
  }
}

uint64_t sum_conns(std::span<const ConnStats* const> conns,
                   std::atomic<uint64_t> ConnStats::*field) {
  uint64_t total = 0;
  for (const ConnStats* c : conns) {
    total += (c->*field).load(std::memory_order_relaxed);
  }
  return total;
}

void render_connections(std::string& out, std::span<const ConnStats* const> conns) {
  family_head(out, "apisix_nginx_http_current_connections", "Number of HTTP connections", "gauge");
  const std::pair<std::string_view, std::atomic<uint64_t> ConnStats::*> states[] = {
      {"active", &ConnStats::active},   {"accepted", &ConnStats::accepted},
      {"handled", &ConnStats::handled}, {"reading", &ConnStats::reading},
      {"writing", &ConnStats::writing}, {"waiting", &ConnStats::waiting}};
  for (const auto& [state, field] : states) {
    out.append("apisix_nginx_http_current_connections{state=\"").append(state).append("\"} ");
    append_uint(out, sum_conns(conns, field));
    out.push_back('\n');
  }
  family_head(out, "apisix_http_requests_total",
              "The total number of client requests since APISIX started", "gauge");
  out.append("apisix_http_requests_total ");
  append_uint(out, sum_conns(conns, &ConnStats::requests));
  out.push_back('\n');
}

void render_node(std::string& out, std::string_view hostname, std::string_view version) {
  family_head(out, "apisix_node_info", "Info of APISIX node", "gauge");
  out.append("apisix_node_info{");
  append_label(out, "hostname", hostname);
  out.push_back(',');
  append_label(out, "version", version);
  out.append("} 1\n");
}

void render_dropped(std::string& out, std::span<const HttpMetrics* const> workers) {
  family_head(out, "sluice_prometheus_dropped_samples_total",
              "Samples the prometheus plugin did not record because a worker reached "
              "plugin_attr.prometheus.max_label_sets",
              "counter");
  uint64_t dropped = 0;
  for (const HttpMetrics* w : workers) {
    dropped += w->dropped();
  }
  out.append("sluice_prometheus_dropped_samples_total ");
  append_uint(out, dropped);
  out.push_back('\n');
}

void render_gauges(std::string& out, std::span<const GaugeFamily> families) {
  for (const GaugeFamily& f : families) {
    family_head(out, f.name, f.help, "gauge");
    for (const GaugeSample& s : f.samples) {
      out.append(f.name);
      for (size_t i = 0; i < s.labels.size(); ++i) {
        out.push_back(i == 0 ? '{' : ',');
        append_label(out, s.labels[i].name, s.labels[i].value);
      }
      out.append(s.labels.empty() ? " " : "} ");
      append_double(out, s.value);
      out.push_back('\n');
    }
  }
}

}  // namespace

uint64_t monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

std::string render_http(std::span<const HttpMetrics* const> workers) {
  return render_http(workers, monotonic_ms());
}

std::string render_http(std::span<const HttpMetrics* const> workers, uint64_t now_ms) {
  const Reading reading(workers);  // the totals keep views of the series' labels
  const StatusTotals status = sum_status(workers, now_ms);
  const RouteTotalsMap routes = sum_routes(workers, now_ms);
  std::string out;
  out.reserve(512 + status.size() * 160 + routes.latency.size() * 7000);
  render_status(out, status);
  render_latency(out, routes);
  render_bandwidth(out, routes);
  render_account(out, routes);
  render_dropped(out, workers);
  return out;
}

void render_host(std::string& out, const HostInput& in) {
  render_connections(out, in.conns);
  render_node(out, in.hostname, in.version);
  render_gauges(out, in.gauges);
}

std::string render(const ExpositionInput& in) {
  std::string out = render_http(in.workers);
  render_host(out, {in.conns, in.hostname, in.version, in.gauges});
  return out;
}

}  // namespace sluice::metrics
