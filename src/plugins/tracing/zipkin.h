#pragma once
// The zipkin plugin (APISIX 3.x's, priority 12011): B3 in (the single `b3` header or the
// X-B3-* ones) and out (X-B3-* naming the apisix.proxy span, as APISIX's injector does), a
// sampling ratio an incoming decision overrides, and span_version 2's spans plus, beyond
// APISIX, a CLIENT span per upstream try, POSTed as Zipkin v2 JSON by a batch processor.

#include <memory>

#include "batch/registry.h"
#include "plugin/info.h"
#include "plugins/tracing/zipkin_conf.h"

namespace sluice::plugins::tracing {

const plugin::PluginInfo& zipkin();

// Thread: any (immutable)
class Zipkin final : public plugin::Plugin {
 public:
  Zipkin(ZipkinConf conf, std::shared_ptr<batch::Handle> out);
  uint32_t phases() const override;
  plugin::Action rewrite(plugin::Context& ctx) const override;
  void header_filter(plugin::Context& ctx) const override;
  void log(plugin::Context& ctx) const override;

 private:
  // The decision the request carries (X-B3-Flags, then b3's or X-B3-Sampled's), -1: none;
  // `in` gets the context it names, if valid.
  int incoming(plugin::Context& ctx, struct Incoming* in) const;
  void inject(plugin::Context& ctx, bool debug) const;

  const ZipkinConf conf_;
  std::shared_ptr<batch::Handle> out_;
};

}  // namespace sluice::plugins::tracing
