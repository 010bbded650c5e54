#pragma once
// The OTLP encoding of one request's spans (opentelemetry.proto.trace.v1): the server span and
// one CLIENT span per upstream try, each a `spans` field (2) of ScopeSpans, ready to be
// concatenated into a batch; and the batch's envelope (ExportTraceServiceRequest with its one
// ResourceSpans, Resource and InstrumentationScope). Bytes are written straight into a buffer:
// no JSON, no intermediate objects.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "plugin/plugin.h"
#include "plugins/tracing/otel_conf.h"

namespace sluice::plugins::tracing {

// OTLP's field numbers, from opentelemetry-proto's trace.proto, common.proto, resource.proto
// and collector/trace/v1/trace_service.proto.
namespace otlp {
inline constexpr uint32_t kExportResourceSpans = 1;  // ExportTraceServiceRequest
inline constexpr uint32_t kResourceSpansResource = 1, kResourceSpansScopeSpans = 2;
inline constexpr uint32_t kResourceAttributes = 1;
inline constexpr uint32_t kScopeSpansScope = 1, kScopeSpansSpans = 2;
inline constexpr uint32_t kScopeName = 1, kScopeVersion = 2;
inline constexpr uint32_t kSpanTraceId = 1, kSpanSpanId = 2, kSpanTraceState = 3,
                          kSpanParentSpanId = 4, kSpanName = 5, kSpanKind = 6, kSpanStart = 7,
                          kSpanEnd = 8, kSpanAttributes = 9, kSpanStatus = 15;
inline constexpr uint32_t kStatusMessage = 2, kStatusCode = 3;
inline constexpr uint32_t kKeyValueKey = 1, kKeyValueValue = 2;
inline constexpr uint32_t kAnyString = 1, kAnyBool = 2, kAnyInt = 3, kAnyDouble = 4;
inline constexpr uint64_t kKindServer = 2, kKindClient = 3;
inline constexpr uint64_t kStatusError = 2;
}  // namespace otlp

// KeyValue attributes (field `field` of the enclosing message).
void put_string_attr(std::string* out, uint32_t field, std::string_view key,
                     std::string_view value);
void put_int_attr(std::string* out, uint32_t field, std::string_view key, int64_t value);

// What the rewrite phase knows of the server span (the request head is gone by the log
// phase): its name, trace_state and request attributes, encoded into `out`.
void encode_request_part(const OtelConf& conf, const plugin::Context& ctx,
                         std::string_view tracestate, std::string* out);

// The request's spans as ScopeSpans `spans` fields, appended to `out`: the server span (its
// request part from ctx.trace.data) ending at `end_ns`, then a client span per try.
void encode_spans(const plugin::Context& ctx, uint64_t end_ns, std::string* out);

// ExportTraceServiceRequest around `spans` (concatenated encode_spans outputs).
void encode_export(std::span<const ResourceAttr> resource, std::span<const std::string> spans,
                   std::string* out);

}  // namespace sluice::plugins::tracing
