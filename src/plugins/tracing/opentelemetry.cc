#include "plugins/tracing/opentelemetry.h"

#include <time.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "plugins/tracing/ids.h"
#include "plugins/tracing/otel_span.h"
#include "plugins/tracing/sinks.h"

namespace sluice::plugins::tracing {

using plugin::Action;
using plugin::Context;
using plugin::Phase;

namespace {

std::string hostname() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

common::Status otel_check(const plugin::Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return common::Status::error(
        "opentelemetry reads plugin_attr.opentelemetry in config.yaml, not plugin_metadata");
  }
  auto c = parse_otel(conf);
  return c.is_ok() ? common::Status::ok() : c.status();
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> otel_make(const plugin::Json& json,
                                                                  const plugin::BuildEnv& env) {
  auto conf = parse_otel(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  auto attr = parse_otel_attr(env.shared.attr_of("opentelemetry"), hostname());
  if (!attr.is_ok()) {
    return common::Status::error("plugin_attr.opentelemetry: " + attr.status().message());
  }
  auto shared_attr = std::make_shared<const OtelAttr>(std::move(attr).value());
  batch::Settings s = shared_attr->batch;
  std::string_view owner = env.owner;
  s.route_id = owner.starts_with("route/") ? std::string(owner.substr(6)) : std::string();
  auto handle = registry(env.shared)->start(s, make_otlp_sink(shared_attr));
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const OpenTelemetry>(
      std::move(conf).value(), std::move(shared_attr), std::move(handle)));
}

}  // namespace

const plugin::PluginInfo& opentelemetry() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i;
    i.name = "opentelemetry";
    i.priority = 12009;
    i.check = otel_check;
    i.make = otel_make;
    i.schema = kOtelSchema;
    return i;
  }();
  return kInfo;
}

OpenTelemetry::OpenTelemetry(OtelConf conf, std::shared_ptr<const OtelAttr> attr,
                             std::shared_ptr<batch::Handle> out)
    : conf_(std::move(conf)), attr_(std::move(attr)), out_(std::move(out)) {}

uint32_t OpenTelemetry::phases() const {
  return plugin::phase_bit(Phase::kRewrite) | plugin::phase_bit(Phase::kLog);
}

void OpenTelemetry::root_trace_id(const Context& ctx, uint8_t out[16]) const {
  if (attr_->trace_id_from_request_id) {
    // APISIX reads the X-Request-Id header, which request-id (12015, before this plugin) sets
    // when it makes one; an id that is not 32 hex digits cannot be a trace id.
    std::string_view id = ctx.request_id;
    if (id.empty()) {
      if (const http::Header* h = ctx.req->find("x-request-id"); h != nullptr) {
        id = h->value;
      }
    }
    if (parse_hex(id, out, 16)) {
      for (int i = 0; i < 16; ++i) {
        if (out[i] != 0) {
          return;
        }
      }
    }
  }
  new_trace_id(out);
}

Action OpenTelemetry::rewrite(Context& ctx) const {
  plugin::Trace& t = ctx.trace;
  if (t.owner != nullptr) {
    return Action::kContinue;  // another tracer (a global rule's, zipkin) has this request
  }
  Incoming in;
  const http::Header* tp = ctx.req->find("traceparent");
  if (tp != nullptr) {
    in = parse_traceparent(tp->value);
  }
  if (in.valid) {
    std::memcpy(t.trace_id, in.trace_id, 16);
  } else {
    root_trace_id(ctx, t.trace_id);
  }
  const bool sampled = sample(conf_.sampler, t.trace_id, in.valid ? in.sampled : -1);
  t.span_id = new_span_id();
  // The upstream's parent is the server span (APISIX injects the same).
  ctx.scratch.clear();
  append_traceparent(&ctx.scratch, t.trace_id, t.span_id, sampled);
  ctx.upstream.headers.set("traceparent", ctx.scratch);
  if (!sampled) {
    return Action::kContinue;
  }
  t.owner = this;
  t.parent_id = in.valid ? in.span_id : 0;
  t.start_ns = ctx.start_ns != 0 ? ctx.start_ns : plugin::monotonic_ns();
  t.wall_offset_ns = wall_minus_monotonic();
  std::string_view tracestate;
  if (const http::Header* ts = ctx.req->find("tracestate"); ts != nullptr && in.valid) {
    tracestate = ts->value;
  }
  t.data.reserve(512);  // kept across requests: grows once per worker, not per request
  encode_request_part(conf_, ctx, tracestate, &t.data);
  return Action::kContinue;
}

void OpenTelemetry::log(Context& ctx) const {
  if (ctx.trace.owner != this) {
    return;
  }
  std::string spans;
  spans.reserve(256 + ctx.trace.data.size() + 96 * ctx.trace.tries.size());
  encode_spans(ctx, plugin::monotonic_ns(), &spans);
  out_->push(std::move(spans));
}

}  // namespace sluice::plugins::tracing
