#include "plugins/tracing/zipkin.h"

#include <cstring>

#include "plugins/tracing/ids.h"
#include "plugins/tracing/sinks.h"
#include "plugins/tracing/zipkin_span.h"

namespace sluice::plugins::tracing {

using plugin::Action;
using plugin::Context;
using plugin::Phase;

namespace {

common::Status zipkin_check(const plugin::Json& conf, plugin::PluginUse) {
  auto c = parse_zipkin(conf);
  return c.is_ok() ? common::Status::ok() : c.status();
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> zipkin_make(const plugin::Json& json,
                                                                    const plugin::BuildEnv& env) {
  auto conf = parse_zipkin(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  // APISIX's reporter: batches of up to 1000 spans, 5 s idle, 60 s at most, no retry.
  batch::Settings s;
  s.name = "zipkin_report";
  s.batch_max_size = 1000;
  s.inactive_timeout_ms = 5000;
  s.buffer_duration_ms = 60000;
  s.max_retry_count = 0;
  std::string_view owner = env.owner;
  s.route_id = owner.starts_with("route/") ? std::string(owner.substr(6)) : std::string();
  auto handle = registry(env.shared)->start(s, make_zipkin_sink(conf->endpoint));
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const Zipkin>(std::move(conf).value(), std::move(handle)));
}

std::string_view header(const Context& ctx, std::string_view name) {
  const http::Header* h = ctx.req->find(name);
  return h != nullptr ? h->value : std::string_view();
}

}  // namespace

const plugin::PluginInfo& zipkin() {
  static const plugin::PluginInfo kInfo{"zipkin",     12011,       false,
                                        zipkin_check, zipkin_make, kZipkinSchema};
  return kInfo;
}

Zipkin::Zipkin(ZipkinConf conf, std::shared_ptr<batch::Handle> out)
    : conf_(std::move(conf)), out_(std::move(out)) {}

uint32_t Zipkin::phases() const {
  return plugin::phase_bit(Phase::kRewrite) | plugin::phase_bit(Phase::kHeaderFilter) |
         plugin::phase_bit(Phase::kLog);
}

int Zipkin::incoming(Context& ctx, Incoming* in) const {
  int decision = header(ctx, "x-b3-flags") == "1" ? 1 : -1;
  if (const http::Header* b3 = ctx.req->find("b3"); b3 != nullptr) {
    *in = parse_b3_single(b3->value);
    ctx.upstream.headers.remove("b3");  // APISIX does not pass it on
    if (in->debug) {
      ctx.upstream.headers.set("x-b3-flags", "1");
    }
    return in->sampled >= 0 ? in->sampled : decision;
  }
  *in = parse_b3_multi(header(ctx, "x-b3-traceid"), header(ctx, "x-b3-spanid"),
                       header(ctx, "x-b3-parentspanid"), "", "");
  std::string_view sampled = header(ctx, "x-b3-sampled");
  if (sampled == "1" || sampled == "true") {
    return 1;
  }
  return sampled == "0" || sampled == "false" ? 0 : decision;
}

void Zipkin::inject(Context& ctx, bool debug) const {
  const plugin::Trace& t = ctx.trace;
  std::string& s = ctx.scratch;
  s.clear();
  append_hex(&s, t.short_id ? t.trace_id + 8 : t.trace_id, t.short_id ? 8 : 16);
  ctx.upstream.headers.set("x-b3-traceid", s);
  s.clear();
  append_hex64(&s, t.child_id);  // the apisix.proxy span is the upstream's parent
  ctx.upstream.headers.set("x-b3-spanid", s);
  s.clear();
  append_hex64(&s, t.span_id);
  ctx.upstream.headers.set("x-b3-parentspanid", s);
  if (debug) {
    ctx.upstream.headers.remove("x-b3-sampled");  // Flags: 1 implies it
  } else {
    ctx.upstream.headers.set("x-b3-sampled", "1");
  }
}

Action Zipkin::rewrite(Context& ctx) const {
  plugin::Trace& t = ctx.trace;
  if (t.owner != nullptr) {
    return Action::kContinue;  // another tracer has this request
  }
  Incoming in;
  const int decision = incoming(ctx, &in);
  const bool sampled = decision >= 0 ? decision == 1
                                     : static_cast<double>(random_u64()) <
                                           conf_.sample_ratio * 18446744073709551616.0;
  if (!sampled) {
    ctx.upstream.headers.set("x-b3-sampled", "0");
    return Action::kContinue;
  }
  t.owner = this;
  if (in.valid) {
    std::memcpy(t.trace_id, in.trace_id, 16);
    static constexpr uint8_t kZero[8] = {};
    t.short_id = std::memcmp(in.trace_id, kZero, 8) == 0;
    t.parent_id = in.span_id;
  } else {
    new_trace_id(t.trace_id);
  }
  t.span_id = new_span_id();
  t.child_id = new_span_id();
  t.start_ns = ctx.start_ns != 0 ? ctx.start_ns : plugin::monotonic_ns();
  t.wall_offset_ns = wall_minus_monotonic();
  zipkin_request_tags(ctx, &t.data);
  inject(ctx, header(ctx, "x-b3-flags") == "1" || in.debug);
  return Action::kContinue;
}

void Zipkin::header_filter(Context& ctx) const {
  if (ctx.trace.owner == this && ctx.trace.mark_ns == 0) {
    ctx.trace.mark_ns = plugin::monotonic_ns();
  }
}

void Zipkin::log(Context& ctx) const {
  if (ctx.trace.owner != this) {
    return;
  }
  std::string spans;
  spans.reserve(1024 + 256 * ctx.trace.tries.size());
  encode_zipkin(conf_, ctx, plugin::monotonic_ns(), &spans);
  out_->push(std::move(spans));
}

}  // namespace sluice::plugins::tracing
