#pragma once
// multi-auth: authenticates a request with the first of several auth plugins that accepts it,
// in the rewrite phase (priority 2600), as APISIX 3.x's. It lives in the plugins room because
// it builds the other built-in auth plugins from its conf.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plugin/info.h"

namespace sluice::plugins::multi_auth {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class MultiAuth final : public plugin::Plugin {
 public:
  using Auth = std::pair<std::string, std::shared_ptr<const plugin::Plugin>>;
  explicit MultiAuth(std::vector<Auth> auths) : auths_(std::move(auths)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  std::vector<Auth> auths_;
};

}  // namespace sluice::plugins::multi_auth
