#include "plugins/loggers/capture.h"

#include <charconv>
#include <cstring>

#include "plugin/args.h"

namespace sluice::plugins::loggers {

namespace {

// Record: owner pointer, part, length (u32), bytes.
constexpr size_t kHeader = sizeof(const void*) + 1 + 4;

template <class F>
void each(const std::string& buf, const void* owner, Part part, F&& f) {
  size_t at = 0;
  while (at + kHeader <= buf.size()) {
    const void* who = nullptr;
    std::memcpy(&who, buf.data() + at, sizeof(who));
    const auto p = static_cast<Part>(buf[at + sizeof(who)]);
    uint32_t n = 0;
    std::memcpy(&n, buf.data() + at + sizeof(who) + 1, 4);
    if (who == owner && p == part) {
      f(std::string_view(buf).substr(at + kHeader, n));
    }
    at += kHeader + n;
  }
}

// The worker's pair table for the entries' header and argument objects (capacity kept).
PairObject& pairs() {
  thread_local PairObject p;
  p.clear();
  return p;
}

void member(std::string* out, std::string_view key, std::string_view json_value) {
  if (out->back() != '{') {
    out->push_back(',');
  }
  append_json_string(out, key);
  out->push_back(':');
  out->append(json_value);
}

}  // namespace

void put(plugin::Context& ctx, const void* owner, Part part, std::string_view data) {
  std::string& buf = ctx.log_capture;
  buf.append(reinterpret_cast<const char*>(&owner), sizeof(owner));
  buf.push_back(static_cast<char>(part));
  const auto n = static_cast<uint32_t>(data.size());
  buf.append(reinterpret_cast<const char*>(&n), 4);
  buf.append(data);
}

size_t begin_record(plugin::Context& ctx, const void* owner, Part part) {
  std::string& buf = ctx.log_capture;
  const size_t at = buf.size();
  buf.append(reinterpret_cast<const char*>(&owner), sizeof(owner));
  buf.push_back(static_cast<char>(part));
  buf.append(4, '\0');
  return at;
}

void end_record(plugin::Context& ctx, size_t begun) {
  std::string& buf = ctx.log_capture;
  const auto n = static_cast<uint32_t>(buf.size() - begun - kHeader);
  std::memcpy(buf.data() + begun + sizeof(const void*) + 1, &n, 4);
}

std::optional<std::string_view> view(const plugin::Context& ctx, const void* owner, Part part) {
  std::optional<std::string_view> found;
  each(ctx.log_capture, owner, part, [&](std::string_view d) {
    if (!found) {
      found = d;
    }
  });
  return found;
}

bool find(const plugin::Context& ctx, const void* owner, Part part, std::string* out) {
  bool found = false;
  each(ctx.log_capture, owner, part, [&](std::string_view d) {
    found = true;
    out->append(d);
  });
  return found;
}

size_t recorded(const plugin::Context& ctx, const void* owner, Part part) {
  size_t n = 0;
  each(ctx.log_capture, owner, part, [&](std::string_view d) { n += d.size(); });
  return n;
}

void request_members(const plugin::Context& ctx, std::string* out) {
  const http::RequestHead* req = ctx.req;
  if (req == nullptr) {
    return;
  }
  static const router::Var kHost = router::Var::parse("host");
  router::VarScratch scratch;
  std::string_view host;
  kHost.get(ctx.match, &scratch, &host);
  thread_local std::string url;
  url.assign(ctx.match.tls != nullptr ? "https://" : "http://");
  char port[8];
  const auto p = std::to_chars(port, port + sizeof(port), ctx.match.server_port);
  url.append(host).append(":").append(port, p.ptr).append(req->target);
  out->append("\"url\":");
  append_json_string(out, url);
  out->append(",\"uri\":");
  append_json_string(out, req->target);
  out->append(",\"method\":");
  append_json_string(out, req->method_text);
  PairObject& headers = pairs();
  for (size_t i = 0; i < req->num_headers; ++i) {
    headers.add(req->headers[i].name, req->headers[i].value, true);
  }
  out->append(",\"headers\":");
  headers.render(out);
  PairObject& args = pairs();
  plugin::each_arg(req->query, [&](std::string_view k, std::string_view v, bool has_value) {
    args.add_arg(k, v, has_value);
  });
  out->append(",\"querystring\":");
  args.render(out);
}

void response_headers(const plugin::Context& ctx, std::string* out) {
  PairObject& headers = pairs();
  if (const http::ResponseHead* up = ctx.upstream_resp) {
    for (size_t i = 0; i < up->num_headers; ++i) {
      if (!ctx.resp.headers.drops(up->headers[i].name)) {
        headers.add(up->headers[i].name, up->headers[i].value, true);
      }
    }
  }
  ctx.resp.headers.for_each_added(
      [&](std::string_view name, std::string_view value) { headers.add(name, value, true); });
  headers.render(out);
}

void render_full(const FullInput& f, std::string* out) {
  const plugin::Context& c = *f.in.ctx;
  out->append("{\"request\":{").append(f.request);
  member(out, "size", std::to_string(c.bytes_in));
  if (f.req_body) {
    member(out, "body", {});
    append_json_string(out, *f.req_body);
  }
  out->append("},\"response\":{\"status\":").append(std::to_string(c.status));
  if (f.resp_headers) {
    member(out, "headers", *f.resp_headers);
  }
  member(out, "size", std::to_string(c.bytes_out));
  if (f.resp_body) {
    member(out, "body", {});
    append_json_string(out, *f.resp_body);
  }
  out->append("},\"server\":{\"hostname\":");
  append_json_string(out, f.in.hostname);
  out->append(",\"version\":");
  append_json_string(out, f.version);
  out->push_back('}');
  if (!c.upstream_ip.empty()) {  // an address and a port: nothing to escape
    const bool v6 = c.upstream_ip.find(':') != std::string_view::npos;
    out->append(",\"upstream\":\"").append(v6 ? "[" : "").append(c.upstream_ip);
    out->append(v6 ? "]:" : ":").append(std::to_string(c.upstream_port)).push_back('"');
  }
  // log-util: a matched route gives its service_id ("" without one); no route, the host.
  out->append(",\"service_id\":");
  if (c.route != nullptr) {
    append_json_string(out, c.service_id);
    out->append(",\"route_id\":");
    append_json_string(out, c.route_id);
  } else {
    append_json_string(out, f.host);
    if (f.no_matched_route_id) {
      out->append(",\"route_id\":\"no-matched\"");
    }
  }
  if (!c.consumer.empty()) {
    out->append(",\"consumer\":{\"username\":");
    append_json_string(out, c.consumer);
    out->push_back('}');
  }
  out->append(",\"client_ip\":");
  append_json_string(out, c.match.remote_addr);
  const uint64_t total_ns = f.in.now_ns > c.start_ns ? f.in.now_ns - c.start_ns : 0;
  const int64_t start_ms = f.in.wall_ms - static_cast<int64_t>(total_ns / 1000000);
  out->append(",\"start_time\":").append(std::to_string(start_ms));
  out->append(",\"latency\":");
  append_ms(out, total_ns);
  uint64_t apisix_ns = total_ns;
  if (c.upstream_start_ns != 0) {
    const uint64_t end = c.upstream_end_ns != 0 ? c.upstream_end_ns : f.in.now_ns;
    const uint64_t up_ns = end > c.upstream_start_ns ? end - c.upstream_start_ns : 0;
    out->append(",\"upstream_latency\":");
    append_ms(out, up_ns);
    apisix_ns = total_ns > up_ns ? total_ns - up_ns : 0;
  }
  out->append(",\"apisix_latency\":");
  append_ms(out, apisix_ns);
  out->push_back('}');
}

}  // namespace sluice::plugins::loggers
