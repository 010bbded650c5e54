#pragma once
// response-rewrite: rewrites the status, headers and body of the responses of the routes (and
// global rules) that enable it, the upstream's and the gateway's own alike (priority 899;
// header_filter and body_filter). `vars` decides per response whether anything is rewritten.
// See README.md beside this file.

#include <cstdint>
#include <string>

#include "plugin/info.h"
#include "plugins/response_rewrite/config.h"

namespace sluice::plugins::response_rewrite {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class ResponseRewrite final : public plugin::Plugin {
 public:
  explicit ResponseRewrite(Conf conf);
  uint32_t phases() const override { return phases_; }
  // Decides (vars) and marks the response, then edits its status and head.
  void header_filter(plugin::Context& ctx) const override;
  // `body`: drops every piece and sends the body with the last. `filters`: holds the pieces
  // and sends the substituted body with the last.
  void body_filter(plugin::Context& ctx, plugin::BodyPiece& piece) const override;
  // `filters` only: lets go of a body still held when the response ended early.
  void log(plugin::Context& ctx) const override;

  const Conf& conf() const { return conf_; }

 private:
  void edit_headers(plugin::Context& ctx, const router::MatchContext& m) const;
  void filter_body(plugin::Context& ctx, plugin::BodyPiece& piece) const;

  Conf conf_;
  uint32_t phases_ = 0;
};

}  // namespace sluice::plugins::response_rewrite
