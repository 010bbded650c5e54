#include "plugins/tracing/otel_span.h"

#include <fmt/format.h>

#include "plugins/tracing/ids.h"
#include "plugins/tracing/proto.h"

namespace sluice::plugins::tracing {

using plugin::Context;

namespace {

void put_id(ProtoWriter& w, uint32_t field, uint64_t id) {
  uint8_t b[8];
  for (int i = 7; i >= 0; --i) {
    b[i] = static_cast<uint8_t>(id);
    id >>= 8;
  }
  w.bytes_field(field, b, 8);
}

void put_status(ProtoWriter& w, int status) {
  char msg[48];
  auto r = fmt::format_to_n(msg, sizeof(msg), "upstream response status: {}", status);
  size_t m = w.begin(otlp::kSpanStatus);
  w.bytes_field(otlp::kStatusMessage, std::string_view(msg, r.size));
  w.uint_field(otlp::kStatusCode, otlp::kStatusError);
  w.end(m);
}

uint64_t wall(const Context& ctx, uint64_t mono_ns) {
  return static_cast<uint64_t>(static_cast<int64_t>(mono_ns) + ctx.trace.wall_offset_ns);
}

// "ip:port" (or "[v6]:port") split.
void split_addr(std::string_view addr, std::string_view* host, int64_t* port) {
  size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) {
    *host = addr;
    *port = 0;
    return;
  }
  *host = addr.substr(0, colon);
  if (host->size() > 1 && host->front() == '[') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = 0;
  for (char c : addr.substr(colon + 1)) {
    *port = *port * 10 + (c - '0');
  }
}

void var_attr(std::string* out, const Context& ctx, std::string_view key, const router::Var& v) {
  router::VarScratch scratch;
  std::string_view value;
  if (v.get(ctx.match, &scratch, &value)) {
    put_string_attr(out, otlp::kSpanAttributes, key, value);
  }
}

}  // namespace

void put_string_attr(std::string* out, uint32_t field, std::string_view key,
                     std::string_view value) {
  ProtoWriter w(out);
  size_t kv = w.begin(field);
  w.bytes_field(otlp::kKeyValueKey, key);
  size_t any = w.begin(otlp::kKeyValueValue);
  w.bytes_field(otlp::kAnyString, value);
  w.end(any);
  w.end(kv);
}

void put_int_attr(std::string* out, uint32_t field, std::string_view key, int64_t value) {
  ProtoWriter w(out);
  size_t kv = w.begin(field);
  w.bytes_field(otlp::kKeyValueKey, key);
  size_t any = w.begin(otlp::kKeyValueValue);
  w.int_field(otlp::kAnyInt, value);
  w.end(any);
  w.end(kv);
}

void encode_request_part(const OtelConf& conf, const Context& ctx, std::string_view tracestate,
                         std::string* out) {
  static const router::Var kHost = router::Var::parse("host");
  static const router::Var kScheme = router::Var::parse("scheme");
  static const router::Var kUserAgent = router::Var::parse("http_user_agent");
  ProtoWriter w(out);
  const http::RequestHead& req = *ctx.req;
  // APISIX's span name: the method, and the route's matched uri when a route matched.
  w.tag(otlp::kSpanName, ProtoWriter::kLen);
  const bool routed = ctx.route != nullptr;
  w.varint(req.method_text.size() + (routed ? 1 + ctx.matched_uri.size() : 0));
  out->append(req.method_text);
  if (routed) {
    out->append(" ").append(ctx.matched_uri);
  }
  if (!tracestate.empty()) {
    w.bytes_field(otlp::kSpanTraceState, tracestate);
  }
  constexpr uint32_t kA = otlp::kSpanAttributes;
  var_attr(out, ctx, "net.host.name", kHost);
  put_string_attr(out, kA, "http.method", req.method_text);
  var_attr(out, ctx, "http.scheme", kScheme);
  put_string_attr(out, kA, "http.target", req.target);
  var_attr(out, ctx, "http.user_agent", kUserAgent);
  if (routed) {
    put_string_attr(out, kA, "apisix.route_id", ctx.route_id);
    put_string_attr(out, kA, "apisix.route_name", ctx.route_name);
    put_string_attr(out, kA, "http.route", ctx.matched_uri);
  }
  if (!ctx.service_id.empty()) {
    put_string_attr(out, kA, "apisix.service_id", ctx.service_id);
    put_string_attr(out, kA, "apisix.service_name", ctx.service_name);
  }
  for (const VarAttr& a : conf.vars) {
    var_attr(out, ctx, a.key, a.var);
  }
  if (conf.headers.empty() && conf.header_pfxs.empty()) {
    return;
  }
  // Header attributes are named as ngx.req.get_headers() names them: lower-case.
  std::string name;
  for (size_t i = 0; i < req.num_headers; ++i) {
    const http::Header& h = req.headers[i];
    name.assign(h.name);
    for (char& c : name) {
      c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    bool wanted = false;
    for (const std::string& e : conf.headers) {
      wanted = wanted || e == name;
    }
    for (const std::string& p : conf.header_pfxs) {
      wanted = wanted || name.starts_with(p);
    }
    if (wanted) {
      put_string_attr(out, kA, name, h.value);
    }
  }
}

void encode_spans(const Context& ctx, uint64_t end_ns, std::string* out) {
  const plugin::Trace& t = ctx.trace;
  ProtoWriter w(out);
  const std::string_view trace_id(reinterpret_cast<const char*>(t.trace_id), 16);
  size_t span = w.begin(otlp::kScopeSpansSpans);
  w.bytes_field(otlp::kSpanTraceId, trace_id);
  put_id(w, otlp::kSpanSpanId, t.span_id);
  if (t.parent_id != 0) {
    put_id(w, otlp::kSpanParentSpanId, t.parent_id);
  }
  out->append(t.data);
  w.uint_field(otlp::kSpanKind, otlp::kKindServer);
  w.fixed64_field(otlp::kSpanStart, wall(ctx, t.start_ns));
  w.fixed64_field(otlp::kSpanEnd, wall(ctx, end_ns));
  // APISIX reports the upstream's status; with no upstream, Sluice reports the client's.
  const int upstream_status = t.tries.empty() ? 0 : t.tries.back().status;
  const int status = upstream_status != 0 ? upstream_status : ctx.status;
  put_int_attr(out, otlp::kSpanAttributes, "http.status_code", status);
  put_int_attr(out, otlp::kSpanAttributes, "http.response.status_code", status);
  if (!ctx.consumer.empty()) {
    put_string_attr(out, otlp::kSpanAttributes, "apisix.consumer_name", ctx.consumer);
  }
  if (!t.tries.empty()) {
    put_string_attr(out, otlp::kSpanAttributes, "apisix.upstream_address", t.tries.back().addr);
  }
  if (upstream_status >= 500) {
    put_status(w, upstream_status);
  }
  w.end(span);
  int n = 0;
  for (const plugin::TraceTry& tt : t.tries) {
    size_t s = w.begin(otlp::kScopeSpansSpans);
    w.bytes_field(otlp::kSpanTraceId, trace_id);
    put_id(w, otlp::kSpanSpanId, new_span_id());
    put_id(w, otlp::kSpanParentSpanId, t.span_id);
    w.bytes_field(otlp::kSpanName, "upstream");
    w.uint_field(otlp::kSpanKind, otlp::kKindClient);
    w.fixed64_field(otlp::kSpanStart, wall(ctx, tt.start_ns));
    w.fixed64_field(otlp::kSpanEnd, wall(ctx, tt.end_ns != 0 ? tt.end_ns : end_ns));
    std::string_view host;
    int64_t port = 0;
    split_addr(tt.addr, &host, &port);
    put_string_attr(out, otlp::kSpanAttributes, "net.peer.name", host);
    put_int_attr(out, otlp::kSpanAttributes, "net.peer.port", port);
    put_int_attr(out, otlp::kSpanAttributes, "apisix.upstream_try", ++n);
    if (tt.status != 0) {
      put_int_attr(out, otlp::kSpanAttributes, "http.status_code", tt.status);
    }
    if (tt.status >= 500) {
      put_status(w, tt.status);
    }
    w.end(s);
  }
}

void encode_export(std::span<const ResourceAttr> resource, std::span<const std::string> spans,
                   std::string* out) {
  ProtoWriter w(out);
  size_t rs = w.begin(otlp::kExportResourceSpans);
  size_t res = w.begin(otlp::kResourceSpansResource);
  for (const ResourceAttr& a : resource) {
    size_t kv = w.begin(otlp::kResourceAttributes);
    w.bytes_field(otlp::kKeyValueKey, a.key);
    size_t any = w.begin(otlp::kKeyValueValue);
    switch (a.type) {
      case ResourceAttr::Type::kString:
        w.bytes_field(otlp::kAnyString, a.s);
        break;
      case ResourceAttr::Type::kBool:
        w.bool_field(otlp::kAnyBool, a.b);
        break;
      case ResourceAttr::Type::kDouble:
        w.double_field(otlp::kAnyDouble, a.d);
        break;
    }
    w.end(any);
    w.end(kv);
  }
  w.end(res);
  size_t ss = w.begin(otlp::kResourceSpansScopeSpans);
  size_t scope = w.begin(otlp::kScopeSpansScope);
  w.bytes_field(otlp::kScopeName, "opentelemetry-lua");  // APISIX's tracer name
  w.end(scope);
  for (const std::string& s : spans) {
    out->append(s);
  }
  w.end(ss);
  w.end(rs);
}

}  // namespace sluice::plugins::tracing
