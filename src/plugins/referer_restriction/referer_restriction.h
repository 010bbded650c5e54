#pragma once
// referer-restriction: refuses a request by the host of its Referer against a whitelist or a
// blacklist of host names and `*.` wildcards, in the access phase (priority 2990), as APISIX
// 3.x's. See README.md beside this file.

#include <string>

#include "plugin/info.h"
#include "plugins/referer_restriction/config.h"

namespace sluice::plugins::referer_restriction {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class RefererRestriction final : public plugin::Plugin {
 public:
  explicit RefererRestriction(Conf conf);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

 private:
  Conf conf_;
  std::string body_;  // {"message":"<message>"}\n, made once
};

}  // namespace sluice::plugins::referer_restriction
