#include "plugins/builtin.h"

#include "plugins/api_breaker/api_breaker.h"
#include "plugins/basic_auth/basic_auth.h"
#include "plugins/brotli/brotli.h"
#include "plugins/consumer_restriction/consumer_restriction.h"
#include "plugins/cors/cors.h"
#include "plugins/fault_injection/fault_injection.h"
#include "plugins/gzip/gzip.h"
#include "plugins/hmac_auth/hmac_auth.h"
#include "plugins/ip_restriction/ip_restriction.h"
#include "plugins/jwt_auth/jwt_auth.h"
#include "plugins/key_auth/key_auth.h"
#include "plugins/limit_conn/limit_conn.h"
#include "plugins/limit_count/limit_count.h"
#include "plugins/limit_req/limit_req.h"
#include "plugins/loggers/loggers.h"
#include "plugins/multi_auth.h"
#include "plugins/prometheus/prometheus.h"
#include "plugins/proxy_cache/proxy_cache.h"
#include "plugins/proxy_mirror/proxy_mirror.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/public_api/public_api.h"
#include "plugins/real_ip/real_ip.h"
#include "plugins/redirect/redirect.h"
#include "plugins/referer_restriction/referer_restriction.h"
#include "plugins/request_id/request_id.h"
#include "plugins/request_validation/request_validation.h"
#include "plugins/response_rewrite/response_rewrite.h"
#include "plugins/tracing/opentelemetry.h"
#include "plugins/tracing/zipkin.h"
#include "plugins/traffic_split/traffic_split.h"
#include "plugins/ua_restriction/ua_restriction.h"

namespace sluice::plugins {

std::span<const plugin::PluginInfo> builtin() {
  // Highest priority first; sized by its initialisers, so an entry cannot be left empty.
  static const plugin::PluginInfo kBuiltin[] = {
      real_ip::info(),               // 23000
      request_id::info(),            // 12015
      tracing::zipkin(),             // 12011
      tracing::opentelemetry(),      // 12009
      fault_injection::info(),       // 11000
      cors::info(),                  // 4000
      ip_restriction::info(),        // 3000
      ua_restriction::info(),        // 2999
      referer_restriction::info(),   // 2990
      request_validation::info(),    // 2800
      multi_auth::info(),            // 2600
      hmac_auth::info(),             // 2530
      basic_auth::info(),            // 2520
      jwt_auth::info(),              // 2510
      key_auth::info(),              // 2500
      consumer_restriction::info(),  // 2400
      proxy_cache::info(),           // 1085
      proxy_mirror::info(),          // 1010
      proxy_rewrite::info(),         // 1008
      api_breaker::info(),           // 1005
      limit_conn::info(),            // 1003
      limit_count::info(),           // 1002
      limit_req::info(),             // 1001
      brotli::info(),                // 996
      gzip::info(),                  // 995
      traffic_split::info(),         // 966
      redirect::info(),              // 900
      response_rewrite::info(),      // 899
      public_api::info(),            // 501
      prometheus::info(),            // 500
      loggers::http_logger(),        // 410
      loggers::tcp_logger(),         // 405
      loggers::syslog(),             // 401
      loggers::udp_logger(),         // 400
      loggers::file_logger(),        // 399
  };
  return kBuiltin;
}

}  // namespace sluice::plugins
