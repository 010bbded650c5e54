#pragma once
// Stateless, zero-copy HTTP/1.1 head parsers (RFC 9112). Strict where request smuggling is at
// stake: bare CR or LF, obs-fold, conflicting Content-Length / Transfer-Encoding are errors.

#include <cstddef>
#include <string_view>

#include "http/message.h"

namespace sluice::h1 {

// Bounds on a head, so a peer cannot make us buffer without end, and what a request head may
// carry on.
struct Limits {
  size_t max_request_line = 8000;          // request-line longer than this -> 414
  size_t max_header_bytes = 32768;         // whole head (request line + headers) beyond -> 431
  size_t max_headers = http::kMaxHeaders;  // more header fields -> 431 (never above kMaxHeaders)
  // nginx's underscores_in_headers: when false, request fields whose name holds `_` are dropped
  // from the parsed head (not an error). CGI-style upstreams read `_` and `-` as one, so a
  // `Transfer_Encoding` line could otherwise reach them as framing we never checked.
  bool underscores_in_headers = false;
};

enum class ParseStatus { kComplete, kIncomplete, kError };

// Outcome of one parse call.
struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  size_t consumed = 0;     // bytes of the head incl. the final CRLFCRLF, when kComplete
  int error_status = 0;    // when kError: 400, 414, 431, 501 or 505 (responses: 502)
  const char* error = "";  // short static reason, for logs
};

// Parses the request head at the start of `buf`; call again with a longer buffer after
// kIncomplete. Returns kError (414/431) as soon as the partial data already exceeds a limit.
// Every prefix of an input yields kIncomplete or the input's own result. On kComplete the
// string_views in `out` point into `buf` (path may point to a static "/" for absolute-form).
// Leading empty lines (CRLF) are skipped and counted in `consumed`. The method is
// 1*( %x41-5A / "_" / "-" ) as nginx accepts it: `get` is a 400, never forwarded.
ParseResult parse_request(std::string_view buf, const Limits& limits, http::RequestHead* out);

// Parses a response head. `request_method` decides HEAD / CONNECT semantics. Body framing per
// RFC 9112 6.3: HEAD requests, 1xx, 204, 304 and 2xx to CONNECT -> kNone; chunked -> kChunked;
// Content-Length -> kLength (0 -> kNone); else kUntilClose, which clears keep_alive. Every error
// is 502. The status line is bounded by max_request_line.
ParseResult parse_response(std::string_view buf, const Limits& limits, http::Method request_method,
                           http::ResponseHead* out);

}  // namespace sluice::h1
