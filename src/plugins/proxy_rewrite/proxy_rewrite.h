#pragma once
// proxy-rewrite: rewrites what the upstream gets (request-target, method, Host, headers) in
// the rewrite phase (priority 1008), by editing Context::upstream. See README.md beside this
// file.

#include "plugin/info.h"
#include "plugins/proxy_rewrite/config.h"

namespace sluice::plugins::proxy_rewrite {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class ProxyRewrite final : public plugin::Plugin {
 public:
  explicit ProxyRewrite(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  // Writes ctx.upstream.uri; false (with the reply set) when a regex could not be run.
  bool rewrite_uri(plugin::Context& ctx, VarSource& src, Captures* caps) const;
  // Tries the regex_uri pairs in order; the first match rewrites `*rewritten` and fills
  // `caps`. False (with the reply set) when a regex could not be run.
  bool run_regex(plugin::Context& ctx, const VarSource& src, std::string_view subject,
                 Captures* caps, std::string_view* rewritten) const;
  void rewrite_headers(plugin::Context& ctx, VarSource& src, const Captures& caps) const;

  Conf conf_;
};

}  // namespace sluice::plugins::proxy_rewrite
