#pragma once
// Trace and span ids: a fast per-thread generator, hex text, and the propagation headers'
// parsers and writers (W3C traceparent, B3 single and multi). Sans-I/O; a malformed header
// parses as "none", so a request with one starts a new trace.

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::plugins::tracing {

// xoshiro256** seeded from the OS once per thread: workers draw ids without a lock or a
// syscall.
// Thread: the calling thread (thread_local state)
uint64_t random_u64();
// A non-zero random span id; a non-zero random 128-bit trace id.
uint64_t new_span_id();
void new_trace_id(uint8_t out[16]);

// CLOCK_REALTIME minus CLOCK_MONOTONIC now: what turns a span's monotonic times into wall ones.
int64_t wall_minus_monotonic();

// Lowercase hex of `n` bytes of `in`, appended.
void append_hex(std::string* out, const uint8_t* in, size_t n);
void append_hex64(std::string* out, uint64_t v);
// Exactly 2*n hex digits (either case) into `out`; false otherwise.
bool parse_hex(std::string_view s, uint8_t* out, size_t n);
bool parse_hex64(std::string_view s, uint64_t* out);

// An incoming span context.
// Thread: any (stack-local)
struct Incoming {
  bool valid = false;  // a context was there and parsed
  uint8_t trace_id[16] = {};
  uint64_t span_id = 0;
  uint64_t parent_id = 0;  // B3 only: the incoming span's own parent (X-B3-ParentSpanId)
  // The sampling decision the header carries: -1 none (defer), 0 no, 1 yes.
  int sampled = -1;
  bool debug = false;  // B3 "d" / X-B3-Flags: 1
};

// W3C Trace Context, version 00 (a later version is read by its first four fields): invalid
// when malformed or when an id is all zeros.
Incoming parse_traceparent(std::string_view v);
// "00-<trace>-<span>-<01|00>".
void append_traceparent(std::string* out, const uint8_t trace_id[16], uint64_t span_id,
                        bool sampled);

// B3 single header: `{TraceId}-{SpanId}[-{Sampled}[-{ParentSpanId}]]` or a lone sampling
// state (`0`, `1`, `d`), which gives a decision and no context. 64-bit trace ids take the
// lower half (the upper is zero).
Incoming parse_b3_single(std::string_view v);
// B3 multi headers; any may be empty (absent).
Incoming parse_b3_multi(std::string_view trace_id, std::string_view span_id,
                        std::string_view parent_id, std::string_view sampled,
                        std::string_view flags);

}  // namespace sluice::plugins::tracing
