#include "plugins/tracing/zipkin_span.h"

#include <fmt/format.h>

#include "plugins/loggers/format.h"
#include "plugins/tracing/ids.h"

namespace sluice::plugins::tracing {

using loggers::append_json_string;
using plugin::Context;

namespace {

uint64_t micros(const Context& ctx, uint64_t mono_ns) {
  return static_cast<uint64_t>(static_cast<int64_t>(mono_ns) + ctx.trace.wall_offset_ns) / 1000;
}

void trace_id(const plugin::Trace& t, std::string* out) {
  out->append("{\"traceId\":\"");
  append_hex(out, t.short_id ? t.trace_id + 8 : t.trace_id, t.short_id ? 8 : 16);
  out->push_back('"');
}

// The members every span has: ids, name, kind, times, localEndpoint.
void head(const ZipkinConf& conf, const Context& ctx, uint64_t id, uint64_t parent,
          std::string_view name, std::string_view kind, uint64_t start_ns, uint64_t end_ns,
          std::string* out) {
  if (!out->empty()) {
    out->push_back(',');
  }
  trace_id(ctx.trace, out);
  out->append(",\"id\":\"");
  append_hex64(out, id);
  if (parent != 0) {
    out->append("\",\"parentId\":\"");
    append_hex64(out, parent);
  }
  out->append("\",\"name\":\"").append(name).append("\"");
  if (!kind.empty()) {
    out->append(",\"kind\":\"").append(kind).append("\"");
  }
  const uint64_t start = micros(ctx, start_ns);
  const uint64_t end = micros(ctx, end_ns < start_ns ? start_ns : end_ns);
  fmt::format_to(std::back_inserter(*out), ",\"timestamp\":{},\"duration\":{}", start, end - start);
  out->append(",\"localEndpoint\":{\"serviceName\":");
  append_json_string(out, conf.service_name);
  if (!conf.server_addr.empty()) {
    out->append(",\"ipv4\":\"").append(conf.server_addr).append("\"");
  }
  fmt::format_to(std::back_inserter(*out), ",\"port\":{}}}", ctx.match.server_port);
}

// "ip:port" as remoteEndpoint (ipv4 or ipv6 by its look).
void remote(std::string_view addr, std::string* out) {
  size_t colon = addr.rfind(':');
  std::string_view host = addr.substr(0, colon), port = addr.substr(colon + 1);
  const bool v6 = host.starts_with('[');
  if (v6) {
    host = host.substr(1, host.size() - 2);
  }
  out->append(",\"remoteEndpoint\":{\"").append(v6 ? "ipv6" : "ipv4").append("\":\"");
  out->append(host).append("\",\"port\":").append(port).append("}");
}

}  // namespace

void zipkin_request_tags(const Context& ctx, std::string* out) {
  out->append(",\"http.method\":");
  append_json_string(out, ctx.req->method_text);
  out->append(",\"http.url\":");
  append_json_string(out, ctx.req->target);  // $request_uri
}

void encode_zipkin(const ZipkinConf& conf, const Context& ctx, uint64_t end_ns, std::string* out) {
  const plugin::Trace& t = ctx.trace;
  const uint64_t header_ns = t.mark_ns != 0 ? t.mark_ns : end_ns;
  // apisix.request: APISIX's reporter turns its peer.ipv4 and peer.port tags into
  // remoteEndpoint; Sluice's has the client's address and no port.
  head(conf, ctx, t.span_id, t.parent_id, "apisix.request", "SERVER", t.start_ns, end_ns, out);
  const std::string_view client = ctx.match.remote_addr;
  out->append(",\"remoteEndpoint\":{\"")
      .append(client.find(':') != std::string_view::npos ? "ipv6" : "ipv4")
      .append("\":");
  append_json_string(out, client);
  out->push_back('}');
  const int upstream_status = t.tries.empty() ? 0 : t.tries.back().status;
  fmt::format_to(std::back_inserter(*out), ",\"tags\":{{\"component\":\"apisix\"{}",
                 std::string_view(t.data));
  if (upstream_status != 0) {
    fmt::format_to(std::back_inserter(*out), ",\"http.status_code\":\"{}\"", upstream_status);
  }
  out->append("}}");
  head(conf, ctx, t.child_id, t.span_id, "apisix.proxy", "", t.start_ns, header_ns, out);
  out->append(",\"tags\":{}}");
  head(conf, ctx, new_span_id(), t.span_id, "apisix.response_span", "", header_ns, end_ns, out);
  out->append(",\"tags\":{}}");
  int n = 0;
  for (const plugin::TraceTry& tt : t.tries) {
    head(conf, ctx, new_span_id(), t.child_id, "apisix.upstream", "CLIENT", tt.start_ns,
         tt.end_ns != 0 ? tt.end_ns : end_ns, out);
    remote(tt.addr, out);
    fmt::format_to(std::back_inserter(*out), ",\"tags\":{{\"apisix.upstream_try\":\"{}\"", ++n);
    if (tt.status != 0) {
      fmt::format_to(std::back_inserter(*out), ",\"http.status_code\":\"{}\"", tt.status);
    }
    out->append("}}");
  }
}

}  // namespace sluice::plugins::tracing
