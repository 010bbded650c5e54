#pragma once
// prometheus: records every request of the routes (and global rules) that enable it into the
// worker's own metric cells, in the log phase (priority 500). The cells are summed and served
// by the export server (runtime/metrics_export.h). See README.md beside this file.

#include "plugin/info.h"
#include "plugins/prometheus/config.h"

namespace sluice::plugins::prometheus {

const plugin::PluginInfo& info();

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
