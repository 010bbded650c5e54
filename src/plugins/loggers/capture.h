#pragma once
// What a logger keeps of a request for its log phase, in Context::log_capture: records tagged
// by the plugin instance and a part, since the request head is gone by the log phase and the
// response head and body pass by piece by piece. Also the default entry's JSON
// (log-util.lua's get_full_log).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plugin/plugin.h"
#include "plugins/loggers/format.h"

namespace sluice::plugins::loggers {

enum class Part : uint8_t {
  kRequest,      // the request's members of the default entry
  kFormatHead,   // capture_head()'s values for log_format
  kReqBody,      // "1": include_req_body_expr said yes
  kRespHeaders,  // the response headers' JSON object
  kRespBody,     // pieces of the response body
  kHost,         // the request's host (syslog's HOSTNAME, as APISIX's ctx.var.host)
};

// Appends one record. Thread: worker.
void put(plugin::Context& ctx, const void* owner, Part part, std::string_view data);
// Appends one record whose bytes the caller then appends to ctx.log_capture itself, and ends
// it with end_record(ctx, begin_record(...)): no temporary string.
size_t begin_record(plugin::Context& ctx, const void* owner, Part part);
void end_record(plugin::Context& ctx, size_t begun);
// `owner`'s first record of `part`, viewed in place; nullopt when none. For the parts
// recorded once per request (all but kRespBody).
std::optional<std::string_view> view(const plugin::Context& ctx, const void* owner, Part part);
// The concatenation of `owner`'s records of `part`, appended to `out`; false when none.
bool find(const plugin::Context& ctx, const void* owner, Part part, std::string* out);
// The bytes `owner` has recorded for `part`.
size_t recorded(const plugin::Context& ctx, const void* owner, Part part);

// The request's members of the default entry, read from the head: "url", "uri", "method",
// "headers" (lower-case names; a repeated header becomes an array) and "querystring"
// (decoded; an argument without '=' is true; a repeated one an array), comma-separated.
void request_members(const plugin::Context& ctx, std::string* out);
// The response headers as a JSON object: the upstream's (none for the gateway's own answers)
// with the plugins' edits applied so far. Called in header_filter.
void response_headers(const plugin::Context& ctx, std::string* out);

// What the default entry is made of besides the Context.
// Thread: worker (stack-local)
struct FullInput {
  LogInput in;
  std::string_view request;  // request_members()
  std::string_view host;     // the request's host (the service_id when no route matched)
  std::optional<std::string_view> resp_headers, req_body, resp_body;
  std::string_view version;
  bool no_matched_route_id = false;  // http-logger: route_id "no-matched" when none
};

// The default entry: request, response, server, upstream, service_id, route_id, consumer,
// client_ip, start_time, latency, upstream_latency, apisix_latency.
void render_full(const FullInput& f, std::string* out);

}  // namespace sluice::plugins::loggers
