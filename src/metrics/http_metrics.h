#pragma once
// Worker-local HTTP metrics for the prometheus plugin: apisix_http_status, apisix_http_latency
// and apisix_bandwidth cells, and Sluice's per-route CPU time and bytes, recorded without locks
// and summed by the renderer at scrape time. Label sets idle for `expire` are retired.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/cell.h"
#include "metrics/series_index.h"

namespace sluice::metrics {

// The label values of one request, borrowed for the length of record().
struct HttpLabels {
  std::string_view route, service, consumer, node, matched_uri, matched_host;
};

// One finished request as the prometheus plugin saw it.
struct HttpSample {
  int code = 0;  // response status
  HttpLabels labels;
  // The values of HttpLayout's extra labels, in its order; missing values are empty.
  std::span<const std::string_view> status_extra, latency_extra, bandwidth_extra;
  double request_ms = 0;    // whole request
  double upstream_ms = -1;  // < 0: no upstream was involved, no `upstream` observation
  double apisix_ms = 0;     // request_ms - upstream_ms (or request_ms)
  uint64_t ingress_bytes = 0, egress_bytes = 0;
  uint64_t cpu_ns = 0;  // the worker's time on this request (sluice_route_cpu_seconds_total)
  uint64_t now_ms = 0;  // CLOCK_MONOTONIC, for expiry; any clock the renderer shares in tests
};

// apisix_http_latency's default bucket upper bounds in milliseconds (inclusive); +Inf follows.
inline constexpr std::array<double, 15> kLatencyBounds = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000};

// What every worker's cells share, fixed when they are made (config.yaml's
// plugin_attr.prometheus default_buckets and metrics.<family>.extra_labels).
// Thread: any (immutable once shared)
struct HttpLayout {
  std::vector<double> bounds{kLatencyBounds.begin(), kLatencyBounds.end()};  // increasing
  // Extra label names appended to each family's labels, in order.
  std::vector<std::string> status_extra, latency_extra, bandwidth_extra;
  // A label set not recorded for this long leaves the export and its cells are freed;
  // 0: never (plugin_attr.prometheus.metrics.<family>.expire).
  uint64_t expire_ms = 0;
  // sluice_route_cpu_seconds_total is exported (the workers measure CPU time).
  bool cpu = false;
};

// apisix_http_latency's `type` label, as an index into RouteSeries::latency.
enum class LatencyType { kRequest, kUpstream, kApisix };
inline constexpr std::array<std::string_view, 3> kLatencyTypeNames = {"request", "upstream",
                                                                      "apisix"};

// One latency histogram: per-bucket counts (not cumulative; one per bound, then +Inf) and the
// sum; the count is the buckets' total, so a scrape never shows _count and le="+Inf"
// disagreeing.
// Thread: the owning worker calls observe(); any thread reads the cells
struct Histogram {
  std::unique_ptr<Counter[]> buckets;  // bounds.size() + 1
  DoubleSum sum;
  void init(size_t bounds) { buckets = std::make_unique<Counter[]>(bounds + 1); }
  void observe(double ms, std::span<const double> bounds);
};

// When a label set was last recorded into (ms, HttpSample::now_ms).
// Thread: the owning worker calls touch(); any thread calls at()
class Touched {
 public:
  void touch(uint64_t ms) { ms_.store(ms, std::memory_order_relaxed); }
  uint64_t at() const { return ms_.load(std::memory_order_relaxed); }
  // Idle for `expire_ms` (non-zero) at `now`; a stamp after `now` (another thread's clock
  // read a little earlier) is not idle.
  bool idle(uint64_t now, uint64_t expire_ms) const {
    const uint64_t t = at();
    return expire_ms != 0 && now >= t && now - t >= expire_ms;
  }

 private:
  std::atomic<uint64_t> ms_{0};
};

// One (route, service, consumer, node, latency extras, bandwidth extras) label set: its three
// latency histograms, its ingress/egress bytes and the worker's time on its requests.
// Thread: the owning worker writes the cells; labels are immutable once published
struct RouteSeries {
  // route="1",service="",consumer="",node="..." escaped, then each family's extra labels
  std::string labels, bandwidth_labels;                     // labels: apisix_http_latency's
  std::string account_labels;                               // route="1",service="",consumer=""
  std::array<Histogram, kLatencyTypeNames.size()> latency;  // indexed by LatencyType
  Counter ingress_bytes, egress_bytes, cpu_ns;
  Touched touched;
  std::atomic<RouteSeries*> next{nullptr};
  RouteSeries* prev = nullptr;  // the worker's
};

// One apisix_http_status label set and its count.
// Thread: the owning worker adds to count; labels are immutable once published
struct StatusSeries {
  std::string labels;  // code="200",route="1",... escaped and in APISIX's order
  Counter count;
  Touched touched;
  // The same request's route set; only the worker follows it, and only while this set is not
  // idle: its route set was touched with it, so it is not idle (not retired) either.
  RouteSeries* route = nullptr;
  std::atomic<StatusSeries*> next{nullptr};
  StatusSeries* prev = nullptr;  // the worker's
};

// One worker's HTTP metrics. max_series caps the label sets held, status sets and route sets
// counted together (a route set carries both latency and bandwidth). A sample that needs a new
// set once the cap is reached is not recorded in that set's families and counts in dropped();
// label sets already held keep recording. A status set is only made once its route set exists.
// With layout().expire_ms, a set idle that long is retired by the worker: when a sample finds
// it (the sample starts a fresh set, as a new series), and in sweeps that record() makes at
// most once a second (or every expire_ms when shorter), so the cap admits new sets again.
// Thread: one worker calls record(); any thread calls dropped() and, between guard().begin()
// and guard().end(), walks the heads
class HttpMetrics {
 public:
  explicit HttpMetrics(size_t max_series,
                       std::shared_ptr<const HttpLayout> layout = default_layout())
      : max_series_(max_series), layout_(std::move(layout)), status_(guard_), routes_(guard_) {}
  HttpMetrics(const HttpMetrics&) = delete;
  HttpMetrics& operator=(const HttpMetrics&) = delete;

  // Allocates only when the sample brings a label set this worker has not seen.
  void record(const HttpSample& s);

  // Samples with at least one family not recorded because the cap was reached.
  uint64_t dropped() const { return dropped_.value(); }
  // Label sets held. Thread: the owning worker.
  size_t series() const { return status_.size() + routes_.size(); }
  // Retired label sets waiting for a scrape to end. Thread: the owning worker.
  size_t retired() const { return status_.retired() + routes_.retired(); }
  // Retires every idle set now. Thread: the owning worker.
  void sweep(uint64_t now_ms);

  // The newest series first; walk `next`. Valid while this object lives.
  const StatusSeries* status_head() const { return status_.head(); }
  const RouteSeries* route_head() const { return routes_.head(); }
  const HttpLayout& layout() const { return *layout_; }
  ReadGuard& guard() const { return guard_; }
  static std::shared_ptr<const HttpLayout> default_layout();

 private:
  // Records into the route set under `key`, creating it if the cap allows; nullptr if not.
  RouteSeries* record_route(const HttpSample& s, std::string_view key);
  bool full() const { return series() >= max_series_; }
  void observe_all(RouteSeries& r, const HttpSample& s) const;
  // A sweep when one is due: a second since the last, or `expire` when shorter.
  void maybe_sweep(uint64_t now_ms);

  size_t max_series_;
  std::shared_ptr<const HttpLayout> layout_;
  mutable ReadGuard guard_;  // declared before the indexes, which keep a reference
  uint64_t next_sweep_ms_ = 0;
  SeriesIndex<StatusSeries> status_;
  SeriesIndex<RouteSeries> routes_;
  Counter dropped_;
  std::string key_;  // lookup key, reused so a seen label set costs no allocation
};

}  // namespace sluice::metrics
