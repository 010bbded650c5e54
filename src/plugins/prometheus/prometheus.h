#pragma once
// prometheus: records every request of the routes (and global rules) that enable it into the
// worker's own metric cells, in the log phase (priority 500). The cells are summed and served
// by the export server (runtime/metrics_export.h). See README.md beside this file.

#include "plugin/info.h"
#include "plugins/prometheus/attr.h"
#include "plugins/prometheus/config.h"

namespace sluice::plugins::prometheus {

// Its lifecycle hooks own the workers' metric cells: process_init makes one per worker,
// worker_init hands each worker its own, control renders them all for the export server.
const plugin::PluginInfo& info();

// What a worker's slot holds: its cells and the extra labels' variables they were made for.
// Thread: the worker (attr is immutable)
struct WorkerCells {
  metrics::HttpMetrics* metrics = nullptr;
  const Attr* attr = nullptr;
  // Turns the meter's wall time (CpuMeter) into CPU time: every kCalibrationNs, the worker
  // thread's CPU time over that period divided by the time charged in it. Below 1 when the
  // thread was preempted within its drives; above 1 for the CPU it spent outside them (the
  // event loop's own work), which is thereby shared among the requests.
  struct Calibration {
    uint64_t next_ns = 0, thread_ns = 0, charged = 0;
    double ratio = 1;
  } cal;
};

// How often a worker reads its thread's CPU clock (a system call) to calibrate.
inline constexpr uint64_t kCalibrationNs = 100'000'000;

// The CPU time of `wall_ns` charged at `now`, recalibrating when a period is over.
uint64_t cpu_time(WorkerCells::Calibration& cal, const plugin::CpuMeter& meter, uint64_t now,
                  uint64_t wall_ns);

// The WorkerLocal slot (plugin.h) holding a worker's WorkerCells.
const void* slot_tag();

// plugin_attr.prometheus.max_label_sets when not set.
inline constexpr size_t kDefaultMaxLabelSets = 10000;

// Thread: any (immutable)
class Prometheus final : public plugin::Plugin {
 public:
  // reads_head: an extra label reads the request head (plugin_attr, attr.h).
  Prometheus(Conf conf, bool reads_head) : conf_(conf), reads_head_(reads_head) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kLog); }
  bool reads_head() const override { return reads_head_; }
  void head(plugin::Context& ctx) const override;
  void log(plugin::Context& ctx) const override;

 private:
  Conf conf_;
  bool reads_head_;
};

}  // namespace sluice::plugins::prometheus
