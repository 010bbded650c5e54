#pragma once
// cors: the Access-Control-* (and Timing-Allow-Origin) headers of APISIX 3.x's cors plugin
// (priority 4000) on every answer of a route, and the gateway's own 200 to an OPTIONS
// request. See README.md beside this file.

#include <string_view>
#include <vector>

#include "plugin/info.h"
#include "plugins/cors/config.h"

namespace sluice::plugins::cors {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class Cors final : public plugin::Plugin {
 public:
  // `by_metadata`: the plugin_metadata origins named by allow_origins_by_metadata, in its
  // order (a key the metadata lacks is left out).
  explicit Cors(Conf conf, std::vector<OriginList> by_metadata = {})
      : conf_(std::move(conf)), by_metadata_(std::move(by_metadata)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

  // The Access-Control-Allow-Origin value for a request whose Origin is `origin` (`has_origin`
  // false: none was sent), or false when the request gets no CORS headers. The value may be a
  // view of `origin`.
  bool allowed_origin(std::string_view origin, bool has_origin, std::string_view* out) const;
  // The Timing-Allow-Origin value, or false when none is sent.
  bool timing_origin(std::string_view origin, bool has_origin, std::string_view* out) const;

 private:
  void set_cors_headers(plugin::Context& ctx, std::string_view allow_origin) const;

  Conf conf_;
  std::vector<OriginList> by_metadata_;
};

}  // namespace sluice::plugins::cors
