#pragma once
// prometheus: records every request of the routes (and global rules) that enable it into the
// worker's own metric cells, in the log phase (priority 500). The cells are summed and served
// by the export server (runtime/metrics_export.h). See README.md beside this file.

#include "plugin/info.h"
#include "plugins/prometheus/config.h"

namespace sluice::plugins::prometheus {

// Its lifecycle hooks own the workers' metric cells: process_init makes one per worker,
// worker_init hands each worker its own, control renders them all for the export server.
const plugin::PluginInfo& info();

// The WorkerLocal slot (plugin.h) holding a worker's metrics::HttpMetrics cell.
const void* slot_tag();

// plugin_attr.prometheus.max_label_sets when not set.
inline constexpr size_t kDefaultMaxLabelSets = 10000;

// Thread: any (immutable)
class Prometheus final : public plugin::Plugin {
 public:
  explicit Prometheus(Conf conf) : conf_(conf) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kLog); }
  void log(plugin::Context& ctx) const override;

 private:
  Conf conf_;
};

}  // namespace sluice::plugins::prometheus
