#include "plugins/tracing/zipkin_span.h"

#include <fmt/format.h>

#include "common/strings.h"
#include "plugins/tracing/ids.h"

namespace sluice::plugins::tracing {

using plugin::Context;

namespace {

// The length of the valid UTF-8 sequence at s[i], 0 when it is not one.
size_t utf8_seq(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) {
      return 0;
    }
  }
  return n;
}

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
  out->append(",\"timestamp\":");
  common::append_uint(*out, start);
  out->append(",\"duration\":");
  common::append_uint(*out, end - start);
  out->append(",\"localEndpoint\":{\"serviceName\":");
  append_json_string(out, conf.service_name);
  if (!conf.server_addr.empty()) {
    out->append(",\"ipv4\":\"").append(conf.server_addr).append("\"");
  }
  out->append(",\"port\":");
  common::append_uint(*out, ctx.match.server_port);
  out->append("}");
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

// Zipkin's tag values are strings: "http.status_code":"200"; none for 0.
void status_tag(int status, std::string* out) {
  if (status > 0) {
    out->append(",\"http.status_code\":\"");
    common::append_uint(*out, static_cast<uint64_t>(status));
    out->push_back('"');
  }
}

}  // namespace

// A JSON string; control characters escaped, invalid UTF-8 replaced by U+FFFD (as the loggers'
// nlohmann-built entries do), without building a JSON object per value.
void append_json_string(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = utf8_seq(s, i);
      if (n == 0) {
        out->append("\\ufffd");
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(static_cast<char>(c));
    }
    ++i;
  }
  out->push_back('"');
}

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
  out->append(",\"tags\":{\"component\":\"apisix\"").append(t.data);
  status_tag(upstream_status, out);
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
    out->append(",\"tags\":{\"apisix.upstream_try\":\"");
    common::append_uint(*out, static_cast<uint64_t>(++n));
    out->push_back('"');
    status_tag(tt.status, out);
    out->append("}}");
  }
}

}  // namespace sluice::plugins::tracing
