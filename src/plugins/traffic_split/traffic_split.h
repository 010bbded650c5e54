#pragma once
// traffic-split: in the access phase (priority 966), the first rule whose `match` passes (or
// that has none) picks one of its weighted upstreams by weighted round robin, and the request
// goes there instead of to the route's upstream (Context::upstream_override): an `upstreams`
// object, an inline upstream built into the snapshot, or the route's own. See README.md.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugin/info.h"
#include "plugins/traffic_split/config.h"
#include "router/expr.h"

namespace sluice::plugins::traffic_split {

const plugin::PluginInfo& info();

// The weighted choice among a rule's upstreams, as smooth weighted round robin (nginx's) makes
// it: each cycle of sum(weights) / gcd picks gives every upstream exactly its share, spread
// out. One counter shared by all workers, so the shares hold node-wide.
// Thread: any (the counter is atomic)
class Schedule {
 public:
  // `weights`: one per choice; zero never picks. All zero: next() is always -1.
  explicit Schedule(const std::vector<int64_t>& weights);
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;
  int next() const;

  // Cycles longer than this are not spelled out: the k-th pick then maps k spread over the
  // cycle (a stride coprime with it) onto the cumulative weights; shares still hold per cycle.
  static constexpr uint64_t kMaxSpelled = 4096;

 private:
  std::vector<uint8_t> order_;    // the cycle, spelled out
  std::vector<uint64_t> bounds_;  // cumulative weights (long cycles)
  uint64_t total_ = 0;
  uint64_t stride_ = 1;
  mutable std::atomic<uint64_t> count_{0};
};

// Thread: any (immutable but for the schedules' counters)
class TrafficSplit final : public plugin::Plugin {
 public:
  struct Choice {
    enum class Kind : uint8_t { kRoute, kUpstream, kMissing } kind = Kind::kRoute;
    const upstream::Upstream* upstream = nullptr;  // kUpstream
    std::string upstream_id;                       // kMissing: for the log line
  };
  struct CompiledRule {
    bool has_match = false;
    std::vector<router::Expr> match;
    std::vector<Choice> choices;
    std::unique_ptr<Schedule> schedule;
  };

  explicit TrafficSplit(std::vector<CompiledRule> rules);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

  // The rule a request takes, as APISIX's access() walks them; null: the route's upstream.
  const CompiledRule* rule_for(const router::MatchContext& m) const;

 private:
  std::vector<CompiledRule> rules_;
};

// Builds the plugin: inline upstreams into the snapshot being built, upstream_ids looked up in
// it (through BuildEnv::shared.upstreams).
common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& conf,
                                                             const plugin::BuildEnv& env);

}  // namespace sluice::plugins::traffic_split
