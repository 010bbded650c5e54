#pragma once
// The Prometheus text exposition (format 0.0.4) of every worker's metrics, summed.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "metrics/conn_stats.h"
#include "metrics/http_metrics.h"

namespace sluice::metrics {

// One label of an extra gauge sample.
struct Label {
  std::string_view name, value;
};

// One sample of an extra gauge family.
struct GaugeSample {
  std::span<const Label> labels;
  double value = 0;
};

// A gauge family the caller computed (e.g. apisix_etcd_reachable, apisix_upstream_status);
// printed after the built-in families, label values escaped.
struct GaugeFamily {
  std::string_view name, help;
  std::span<const GaugeSample> samples;
};

// The families the gateway itself knows: connection counts, the node, and gauges it computed.
struct HostInput {
  std::span<const ConnStats* const> conns;
  std::string_view hostname, version;  // apisix_node_info's labels
  std::span<const GaugeFamily> gauges;
};

// What one scrape shows. The pointed-to objects must outlive render().
struct ExpositionInput {
  std::span<const HttpMetrics* const> workers;
  std::span<const ConnStats* const> conns;
  std::string_view hostname, version;  // apisix_node_info's labels
  std::span<const GaugeFamily> gauges;
};

// Thread: any (typically control). Reads the workers' cells while they keep recording; a
// label set recorded by several workers prints once with the values summed.
std::string render(const ExpositionInput& in);

// The two halves of render(): the HTTP families recorded by the prometheus plugin's cells
// (status, latency, bandwidth, dropped samples), and the gateway's own, appended to `out`.
std::string render_http(std::span<const HttpMetrics* const> workers);
// As above at `now_ms` (the clock HttpSample::now_ms was taken on), for expiry.
std::string render_http(std::span<const HttpMetrics* const> workers, uint64_t now_ms);
// CLOCK_MONOTONIC in milliseconds: the clock the prometheus plugin stamps samples with.
uint64_t monotonic_ms();
void render_host(std::string& out, const HostInput& in);

}  // namespace sluice::metrics
