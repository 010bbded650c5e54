#pragma once
// limit-count: fixed-window request counting per key, in the access phase (priority 1002).
// `local` counts node-wide in a CounterTable shared by all workers and every snapshot;
// `redis` and `redis-cluster` count cluster-wide with one script call per request, while the
// request waits without blocking its worker. See README.md beside this file.

#include <memory>
#include <string>
#include <vector>

#include "plugin/info.h"
#include "plugins/limit_count/config.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/key.h"
#include "plugins/limit_count/redis_policy.h"
#include "router/expr.h"

namespace sluice::plugins::limit_count {

const plugin::PluginInfo& info();

// The configured plugin on one route (or global rule).
// Thread: any (immutable; the counters it points at are lock-free)
class LimitCount final : public plugin::Plugin {
 public:
  LimitCount(Conf conf, std::string scope, std::shared_ptr<CounterTable> table);
  // The conf is a consumer's (or its group's), merged into routes: its counters are per route,
  // as APISIX keys them under conf_type "route&consumer".
  void set_per_route(bool on) { per_route_ = on; }
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

  const Conf& conf() const { return conf_; }
  // Sets the X-RateLimit-* headers and, when rejected, the reply; the redis path calls it with
  // the script's answer.
  plugin::Action verdict(plugin::Context& ctx, bool allowed, uint64_t remaining,
                         uint64_t reset_s) const;
  // Policy redis / redis-cluster could not count: 500, or pass with allow_degradation.
  plugin::Action failed(plugin::Context& ctx) const;
  // The counter's name in Redis for `key` (built in ctx.scratch, where `key` may already be).
  std::string_view redis_key(plugin::Context& ctx, std::string_view key) const;
  const RedisTarget& redis_target() const { return redis_; }

 private:
  Conf conf_;
  std::string scope_;        // "route/1", or "group/<name>"; with the conf hash, names the counters
  uint64_t scope_hash_ = 0;  // of scope_, which already holds the conf's hash
  KeyBuilder key_;
  std::shared_ptr<CounterTable> table_;  // policy local
  std::string limit_value_;              // X-RateLimit-Limit's value: the count
  std::string rejected_body_;
  RedisTarget redis_;         // policy redis / redis-cluster
  std::string redis_prefix_;  // "plugin-limit-count:<scope>:"
  bool per_route_ = false;    // a consumer's conf: counted per route (set_per_route)
};

}  // namespace sluice::plugins::limit_count
