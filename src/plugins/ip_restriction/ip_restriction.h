#pragma once
// ip-restriction: refuses a request by its client address (the `remote_addr` the router sees)
// against a whitelist or a blacklist of addresses and CIDR blocks, IPv4 and IPv6, in the access
// phase (priority 3000), as APISIX 3.x's. See README.md beside this file.

#include "plugin/info.h"
#include "plugins/ip_restriction/config.h"

namespace sluice::plugins::ip_restriction {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class IpRestriction final : public plugin::Plugin {
 public:
  explicit IpRestriction(Conf conf);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

 private:
  Conf conf_;
  std::string body_;  // {"message":"<message>"}\n, made once
};

}  // namespace sluice::plugins::ip_restriction
