#pragma once
// api-breaker: APISIX's circuit breaker (priority 1005). The access hook refuses a request
// while its host + uri is broken; the header_filter hook counts the upstream's answer as
// unhealthy or healthy. State is node-wide (BreakerTable), per route (or rule) and conf, so a
// conf change starts from a clean state. See README.md beside this file.

#include <memory>
#include <string>
#include <vector>

#include "plugin/info.h"
#include "plugins/api_breaker/breaker_table.h"
#include "plugins/api_breaker/config.h"

namespace sluice::plugins::api_breaker {

const plugin::PluginInfo& info();

// Thread: any (immutable; the table it points at is lock-free)
class ApiBreaker final : public plugin::Plugin {
 public:
  ApiBreaker(Conf conf, uint64_t scope, std::shared_ptr<BreakerTable> table);
  uint32_t phases() const override {
    return plugin::phase_bit(plugin::Phase::kAccess) |
           plugin::phase_bit(plugin::Phase::kHeaderFilter);
  }
  plugin::Action access(plugin::Context& ctx) const override;
  void header_filter(plugin::Context& ctx) const override;

  // The request's host (lower case, without port) and uri, hashed: APISIX's key.
  static uint64_t request_key(const plugin::Context& ctx);

 private:
  uint64_t key(uint64_t request) const;
  static bool listed(const std::vector<int>& list, int status);

  Conf conf_;
  Rule rule_;
  uint64_t scope_;
  std::shared_ptr<BreakerTable> table_;
};

}  // namespace sluice::plugins::api_breaker
