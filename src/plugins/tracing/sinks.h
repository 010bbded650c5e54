#pragma once
// The tracers' batch sinks and the registry their processors join (the loggers': one set of
// batch metrics, one stop at shutdown).

#include <memory>

#include "batch/processor.h"
#include "batch/registry.h"
#include "plugin/info.h"
#include "plugins/tracing/otel_conf.h"

namespace sluice::plugins::tracing {

std::shared_ptr<batch::Registry> registry(plugin::Shared& shared);

// OTLP/HTTP: each batch's spans in one ExportTraceServiceRequest, POSTed as
// application/x-protobuf to the collector.
std::unique_ptr<batch::Sink> make_otlp_sink(std::shared_ptr<const OtelAttr> attr);

// Zipkin v2: each batch's spans in one JSON array, POSTed as application/json.
std::unique_ptr<batch::Sink> make_zipkin_sink(const Endpoint& endpoint);

}  // namespace sluice::plugins::tracing
