#pragma once
// The opentelemetry plugin (APISIX 3.x's, priority 12009): a SERVER span per request, named and
// attributed as APISIX's, with the incoming W3C traceparent as its parent and a traceparent
// naming it sent upstream; beyond APISIX, a CLIENT span per upstream try. Spans are encoded
// as OTLP protobuf in the log phase and exported by a batch processor (batch/) to
// plugin_attr.opentelemetry.collector over OTLP/HTTP. See README.md beside this file.

#include <memory>
#include <string>

#include "batch/registry.h"
#include "plugin/info.h"
#include "plugins/tracing/otel_conf.h"

namespace sluice::plugins::tracing {

const plugin::PluginInfo& opentelemetry();

// Thread: any (immutable)
class OpenTelemetry final : public plugin::Plugin {
 public:
  OpenTelemetry(OtelConf conf, std::shared_ptr<const OtelAttr> attr,
                std::shared_ptr<batch::Handle> out);
  uint32_t phases() const override;
  plugin::Action rewrite(plugin::Context& ctx) const override;
  void log(plugin::Context& ctx) const override;

 private:
  // The request's trace id when it starts a trace.
  void root_trace_id(const plugin::Context& ctx, uint8_t out[16]) const;

  const OtelConf conf_;
  std::shared_ptr<const OtelAttr> attr_;
  std::shared_ptr<batch::Handle> out_;
};

}  // namespace sluice::plugins::tracing
