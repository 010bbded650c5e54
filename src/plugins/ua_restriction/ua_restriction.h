#pragma once
// ua-restriction: refuses a request by its User-Agent against an allowlist or a denylist of
// PCRE2 patterns, in the access phase (priority 2999), as APISIX 3.x's. See README.md beside
// this file.

#include <string>
#include <string_view>

#include "plugin/info.h"
#include "plugins/ua_restriction/config.h"

namespace sluice::plugins::ua_restriction {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class UaRestriction final : public plugin::Plugin {
 public:
  explicit UaRestriction(Conf conf);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

  // Whether one User-Agent value matches a rule (searched after stripping whitespace at both
  // ends, as APISIX's pl.stringx.strip). A pattern that cannot run (a PCRE2 limit) does not
  // match, as ngx.re.find's error reads in APISIX.
  bool matches(std::string_view user_agent) const;

 private:
  plugin::Action refuse(plugin::Context& ctx) const;

  Conf conf_;
  std::string body_;  // {"message":"<message>"}\n, made once
};

}  // namespace sluice::plugins::ua_restriction
