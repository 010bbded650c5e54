#pragma once
// public-api: answers a route's request with a plugin's API (prometheus's metrics page), as
// APISIX 3.x's (priority 501, access): the conf's `uri`, or the request's, names the API; an
// unknown one is 404. See README.md beside this file.

#include <memory>

#include "plugin/info.h"
#include "plugins/public_api/api_registry.h"
#include "plugins/public_api/config.h"

namespace sluice::plugins::public_api {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class PublicApi final : public plugin::Plugin {
 public:
  PublicApi(Conf conf, std::shared_ptr<const ApiRegistry> apis)
      : conf_(std::move(conf)), apis_(std::move(apis)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

 private:
  Conf conf_;
  std::shared_ptr<const ApiRegistry> apis_;  // null: the gateway registered none
};

}  // namespace sluice::plugins::public_api
