#include "plugins/loggers/capture.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <map>
#include <vector>

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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string dump(const plugin::Json& j) {
  return j.dump(-1, ' ', false, plugin::Json::error_handler_t::replace);
}

// The request's host as `vars` reads it (Host without its port, lower-case).
std::string host_of(const plugin::Context& ctx) {
  static const router::Var kHost = router::Var::parse("host");
  router::VarScratch scratch;
  std::string_view v;
  kHost.get(ctx.match, &scratch, &v);
  return std::string(v);
}

void member(std::string* out, std::string_view key, std::string_view json_value) {
  if (out->back() != '{') {
    out->push_back(',');
  }
  append_json_string(out, key);
  out->push_back(':');
  out->append(json_value);
}

std::string ms3(uint64_t ns) { return fmt::format("{}", static_cast<double>(ns) / 1e6); }

}  // namespace

void put(plugin::Context& ctx, const void* owner, Part part, std::string_view data) {
  std::string& buf = ctx.log_capture;
  buf.append(reinterpret_cast<const char*>(&owner), sizeof(owner));
  buf.push_back(static_cast<char>(part));
  const auto n = static_cast<uint32_t>(data.size());
  buf.append(reinterpret_cast<const char*>(&n), 4);
  buf.append(data);
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
  const std::string host = host_of(ctx);
  std::string url = fmt::format("{}://{}:{}{}", ctx.match.tls != nullptr ? "https" : "http", host,
                                ctx.match.server_port, req->target);
  out->append("\"url\":");
  append_json_string(out, url);
  out->append(",\"uri\":");
  append_json_string(out, req->target);
  out->append(",\"method\":");
  append_json_string(out, req->method_text);
  plugin::Json headers = plugin::Json::object();
  for (size_t i = 0; i < req->num_headers; ++i) {
    plugin::add_value(headers, lower(req->headers[i].name), std::string(req->headers[i].value));
  }
  out->append(",\"headers\":").append(dump(headers));
  plugin::Json args = plugin::decode_args(req->query);
  out->append(",\"querystring\":").append(dump(args));
}

void response_headers(const plugin::Context& ctx, std::string* out) {
  plugin::Json headers = plugin::Json::object();
  if (const http::ResponseHead* up = ctx.upstream_resp) {
    for (size_t i = 0; i < up->num_headers; ++i) {
      if (!ctx.resp.headers.drops(up->headers[i].name)) {
        plugin::add_value(headers, lower(up->headers[i].name), std::string(up->headers[i].value));
      }
    }
  }
  ctx.resp.headers.for_each_added([&](std::string_view name, std::string_view value) {
    plugin::add_value(headers, lower(name), std::string(value));
  });
  out->append(dump(headers));
}

void render_full(const FullInput& f, std::string* out) {
  const plugin::Context& c = *f.in.ctx;
  out->append("{\"request\":{").append(f.request);
  member(out, "size", std::to_string(c.bytes_in));
  if (f.req_body) {
    std::string b;
    append_json_string(&b, *f.req_body);
    member(out, "body", b);
  }
  out->append("},\"response\":{\"status\":").append(std::to_string(c.status));
  if (f.resp_headers) {
    member(out, "headers", *f.resp_headers);
  }
  member(out, "size", std::to_string(c.bytes_out));
  if (f.resp_body) {
    std::string b;
    append_json_string(&b, *f.resp_body);
    member(out, "body", b);
  }
  out->append("},\"server\":{\"hostname\":");
  append_json_string(out, f.in.hostname);
  out->append(",\"version\":");
  append_json_string(out, f.version);
  out->push_back('}');
  std::string s;
  if (!c.upstream_ip.empty()) {
    s = c.upstream_ip.find(':') != std::string_view::npos
            ? fmt::format("[{}]:{}", c.upstream_ip, c.upstream_port)
            : fmt::format("{}:{}", c.upstream_ip, c.upstream_port);
    out->append(",\"upstream\":");
    append_json_string(out, s);
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
  out->append(",\"latency\":").append(ms3(total_ns));
  uint64_t apisix_ns = total_ns;
  if (c.upstream_start_ns != 0) {
    const uint64_t end = c.upstream_end_ns != 0 ? c.upstream_end_ns : f.in.now_ns;
    const uint64_t up_ns = end > c.upstream_start_ns ? end - c.upstream_start_ns : 0;
    out->append(",\"upstream_latency\":").append(ms3(up_ns));
    apisix_ns = total_ns > up_ns ? total_ns - up_ns : 0;
  }
  out->append(",\"apisix_latency\":").append(ms3(apisix_ns));
  out->push_back('}');
}

}  // namespace sluice::plugins::loggers
