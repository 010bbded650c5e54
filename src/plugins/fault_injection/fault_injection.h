#pragma once
// fault-injection: in the rewrite phase (priority 11000), delays a sampled share of requests
// (the request is suspended on a timer of its worker's loop; the worker never sleeps) and/or
// answers a sampled share itself with abort's status, body and headers. `vars` narrow both to
// requests matching any of their lua-resty-expr expressions. See README.md beside this file.

#include "plugin/info.h"
#include "plugins/fault_injection/config.h"

namespace sluice::plugins::fault_injection {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class FaultInjection final : public plugin::Plugin {
 public:
  explicit FaultInjection(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;
  const Conf& conf() const { return conf_; }

  // APISIX's sample_hit: random(1, 100) <= percentage; no percentage always hits. Exposed for
  // the tests, which count hits over many draws.
  static bool sample_hit(int percentage);

 private:
  // Fills the reply (status, body, headers) abort gives.
  void abort_reply(plugin::Context& ctx) const;
  Conf conf_;
};

}  // namespace sluice::plugins::fault_injection
