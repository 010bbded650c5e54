#include "plugins/builtin.h"

#include "plugins/basic_auth/basic_auth.h"
#include "plugins/consumer_restriction/consumer_restriction.h"
#include "plugins/hmac_auth/hmac_auth.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/jwt_auth/jwt_auth.h"
#include "plugins/key_auth/key_auth.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/multi_auth.h"
#include "plugins/prometheus/prometheus.h"
#include "plugins/proxy_mirror/proxy_mirror.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/redirect/redirect.h"
#include "plugins/referer_restriction/referer_restriction.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "plugins/traffic_split/traffic_split.h"
#include "plugins/ua_restriction/ua_restriction.h"

namespace sluice::plugins {

std::span<const plugin::PluginInfo> builtin() {
  // Highest priority first; sized by its initialisers, so an entry cannot be left empty.
  static const plugin::PluginInfo kBuiltin[] = {
      ip_restriction::info(),        // 3000
      ua_restriction::info(),        // 2999
      referer_restriction::info(),   // 2990
      multi_auth::info(),            // 2600
      hmac_auth::info(),             // 2530
      basic_auth::info(),            // 2520
      jwt_auth::info(),              // 2510
      key_auth::info(),              // 2500
      consumer_restriction::info(),  // 2400
      proxy_mirror::info(),          // 1010
      proxy_rewrite::info(),         // 1008
      limit_count::info(),           // 1002
      traffic_split::info(),         // 966
      redirect::info(),              // 900
      response_rewrite::info(),      // 899
      prometheus::info(),            // 500
  };
  return kBuiltin;
}

}  // namespace sluice::plugins
