#pragma once
// Pieces shared by the request and response head parsers: the HTTP version, field-line syntax,
// and what the fields say about framing and the connection (RFC 9112 2.3, 5, 6.1, 6.3, 9.6).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/h1/parser.h"
#include "http/message.h"

namespace sluice::h1 {

// What the fields say, gathered while they are parsed so nothing is scanned twice.
struct FieldSummary {
  uint32_t cl_count = 0;        // Content-Length field lines
  bool cl_bad = false;          // a value that is not 1*DIGIT below 2^63
  bool cl_conflict = false;     // two lines with different values
  uint64_t content_length = 0;  // value of the first valid line
  bool te_present = false;
  bool te_bad = false;           // an empty element or a non-token coding
  uint32_t te_chunked = 0;       // how many times `chunked` was listed
  uint32_t te_other = 0;         // codings other than chunked
  bool te_chunked_last = false;  // the final coding is chunked
  bool conn_close = false;
  bool conn_keep_alive = false;
  uint32_t host_count = 0;
  std::string_view host;  // value of the last Host line
  bool expect_continue = false;
};

// "HTTP/1.0" or "HTTP/1.1" -> *minor. Other well-formed versions -> 505, anything else -> 400.
ParseResult parse_version(std::string_view v, int* minor);

// Result of parsing one line ending at `stop` (a line-stop byte): kComplete when it is CRLF.
ParseResult check_crlf(const char* stop, const char* end);

// Parses field lines from `begin` through the empty line that ends the head. kComplete's
// `consumed` counts from `begin`. Errors are 400 (syntax) or 431 (more than `max_fields`).
// `ignore_invalid_names`: as nginx's ignore_invalid_headers (on by default), a line whose name
// holds a visible character outside the token set (`"X-A": b`, `X(Y: b`) is left out of the
// head rather than refused; one with a space or control character in its name is still a 400.
ParseResult parse_fields(const char* begin, const char* end, size_t max_fields,
                         http::Header* headers, size_t* num_headers, FieldSummary* summary,
                         bool ignore_invalid_names = false);

// Body framing decided by the fields alone.
struct Framing {
  http::BodyKind kind = http::BodyKind::kUntilClose;  // kUntilClose: no framing field at all
  uint64_t length = 0;
  int error_status = 0;  // 400 or 501 when the framing fields are unacceptable
  const char* error = "";
};

// RFC 9112 6.3 for the framing fields. Requests pass allow_equal_cl = false: duplicate
// Content-Length lines are rejected even when equal.
Framing decide_framing(const FieldSummary& s, bool allow_equal_cl);

// True when `v` is a uri-host with an optional port and no userinfo; empty is allowed.
bool valid_host(std::string_view v);

inline ParseResult parse_error(int status, const char* why) {
  return {ParseStatus::kError, 0, status, why};
}
inline ParseResult parse_incomplete() { return {ParseStatus::kIncomplete, 0, 0, ""}; }
inline ParseResult parse_complete(size_t n) { return {ParseStatus::kComplete, n, 0, ""}; }

}  // namespace sluice::h1
