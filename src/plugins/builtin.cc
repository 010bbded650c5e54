#include "plugins/builtin.h"

#include <array>

#include "plugins/limit_count/limit_count.h"
#include "plugins/prometheus/prometheus.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/redirect/redirect.h"
#include "plugins/response_rewrite/response_rewrite.h"

namespace sluice::plugins {

std::span<const plugin::PluginInfo> builtin() {
  static const std::array<plugin::PluginInfo, 5> kBuiltin{
      proxy_rewrite::info(),     // 1008
      limit_count::info(),       // 1002
      redirect::info(),          // 900
      response_rewrite::info(),  // 899
      prometheus::info(),        // 500
  };
  return kBuiltin;
}

}  // namespace sluice::plugins
