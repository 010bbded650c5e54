#pragma once
// opentelemetry's conf (a route's: sampler, additional attributes) and plugin_attr (trace id
// source, resource, collector, batch span processor), with APISIX's schema texts.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "batch/processor.h"
#include "common/status.h"
#include "plugin/info.h"
#include "plugins/tracing/http_post.h"
#include "router/expr.h"

namespace sluice::plugins::tracing {

enum class SamplerKind : uint8_t { kAlwaysOn, kAlwaysOff, kTraceIdRatio, kParentBase };

// Thread: any (immutable)
struct Sampler {
  SamplerKind kind = SamplerKind::kAlwaysOff;
  double fraction = 0;
  SamplerKind root = SamplerKind::kAlwaysOff;  // parent_base's, for a request with no parent
  double root_fraction = 0;
};

// An attribute read per request: a variable, or request headers by name or name prefix.
// Thread: any (immutable)
struct VarAttr {
  std::string key;
  router::Var var;
};

// Thread: any (immutable)
struct OtelConf {
  Sampler sampler;
  std::vector<VarAttr> vars;             // additional_attributes
  std::vector<std::string> headers;      // additional_header_prefix_attributes, lower-case
  std::vector<std::string> header_pfxs;  // those ending in '*', the '*' cut
};

// One resource attribute: a string, a number (sent as a double, as APISIX does) or a bool.
// Thread: any (immutable)
struct ResourceAttr {
  enum class Type : uint8_t { kString, kDouble, kBool } type = Type::kString;
  std::string key;
  std::string s;
  double d = 0;
  bool b = false;
};

// Thread: any (immutable)
struct OtelAttr {
  bool trace_id_from_request_id = false;  // trace_id_source: x-request-id
  std::vector<ResourceAttr> resource;     // in key order; service.name added when absent
  Endpoint collector;                     // path /v1/traces
  uint64_t timeout_ms = 3000;
  HttpPoster::Headers request_headers;
  batch::Settings batch;
};

common::StatusOr<OtelConf> parse_otel(const plugin::Json& conf);
// plugin_attr.opentelemetry; `hostname` starts the resource's attributes.
common::StatusOr<OtelAttr> parse_otel_attr(const plugin::Json& attr, const std::string& hostname);
extern const char* const kOtelSchema;

// Whether a sampler samples a request whose trace id is `trace_id`, with the parent's
// decision `parent_sampled` (-1: no parent).
bool sample(const Sampler& s, const uint8_t trace_id[16], int parent_sampled);

}  // namespace sluice::plugins::tracing
