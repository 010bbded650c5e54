#pragma once
// redirect: answers the request with a redirect (`Location` and a 3xx, or the code the conf
// says) in the rewrite phase (priority 900): to a templated `uri`, to what `regex_uri` makes of
// the path, or, for `http_to_https`, to the same URL over HTTPS. See README.md beside this
// file.

#include <cstdint>

#include "plugin/info.h"
#include "plugins/redirect/config.h"
#include "router/expr.h"

namespace sluice::plugins::redirect {

const plugin::PluginInfo& info();

// The port http_to_https names in its Location, as APISIX's get_port picks it:
// plugin_attr.redirect.https_port, else the HTTPS listener's (Shared::ssl_port, 0 when
// apisix.ssl is off); 0 when neither says one.
uint16_t https_port(const plugin::Shared& shared);

// Thread: any (immutable)
class Redirect final : public plugin::Plugin {
 public:
  // `port`: https_port(); 0 and 443 leave the port out of the Location.
  Redirect(Conf conf, uint16_t port);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  // Writes the new URI (before encode_uri and append_query_string) into *out and the status
  // into *code. kNone: no redirect for this request (already HTTPS, regex_uri did not match,
  // `http_to_https: false`); kFailed: the regex could not run.
  enum class Target : uint8_t { kNone, kMade, kFailed };
  Target target(plugin::Context& ctx, proxy_rewrite::VarSource& src, std::string* out,
                int* code) const;

  Conf conf_;
  UriTemplate to_https_;  // https://$host[:port]$request_uri
  router::Var scheme_;
};

}  // namespace sluice::plugins::redirect
