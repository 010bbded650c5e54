#pragma once
// What a tracing plugin (plugins/tracing/) keeps of one request on the plugin Context: the
// server span's ids and the upstream tries the exchange records for it, one client span each.
// The exchange records tries only while `owner` is set, so a request no tracer samples costs a
// pointer test per try.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::plugin {

// One upstream try as the exchange saw it. Times are CLOCK_MONOTONIC nanoseconds.
// Thread: worker
struct TraceTry {
  std::string_view addr;  // "ip:port", a view into the pinned snapshot's upstream node
  int status = 0;         // the upstream's status; 502/504 for a try that failed; 0: none
  uint64_t start_ns = 0, end_ns = 0;
};

// Thread: worker
struct Trace {
  // The plugin instance tracing this request (the first tracer to sample it); null: none, and
  // the exchange records nothing.
  const void* owner = nullptr;
  uint8_t trace_id[16] = {};
  uint64_t span_id = 0;        // the server span's
  uint64_t parent_id = 0;      // the incoming context's span; 0: a root span
  uint64_t start_ns = 0;       // CLOCK_MONOTONIC, the server span's start
  int64_t wall_offset_ns = 0;  // CLOCK_REALTIME minus CLOCK_MONOTONIC, taken at the start
  // zipkin's: the apisix.proxy span under the server span, the time the response head was
  // ready (it ends that span), and a trace id that came as 64 bits (B3: written back so).
  uint64_t child_id = 0;
  uint64_t mark_ns = 0;
  bool short_id = false;
  // The tracer's own bytes for its log phase (OTLP: the request's attributes, already
  // encoded). Capacity kept across requests.
  std::string data;
  std::vector<TraceTry> tries;  // capacity kept

  void clear() {
    owner = nullptr;
    parent_id = 0;
    mark_ns = 0;
    short_id = false;
    data.clear();
    tries.clear();
  }
};

}  // namespace sluice::plugin
