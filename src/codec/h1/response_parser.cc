// parse_response: the status line and response framing (RFC 9112 4, 6.3) on top of the shared
// field parser. Every error is the upstream's fault, so every error is 502.

#include <algorithm>

#include "codec/h1/fields.h"
#include "codec/h1/parser.h"
#include "codec/h1/scan.h"

namespace sluice::h1 {

namespace {

using http::BodyKind;
using http::Method;

void reset_response(http::ResponseHead* out) {
  out->status = 0;
  out->reason = {};
  out->version_minor = 1;
  out->num_headers = 0;
  out->body_kind = BodyKind::kNone;
  out->content_length = 0;
  out->keep_alive = true;
}

// HTTP-version SP 3DIGIT [SP reason]; a missing SP before an empty reason is tolerated.
ParseResult parse_status_line(std::string_view line, http::ResponseHead* out) {
  if (line.size() < 12 || line[8] != ' ' || !is_digit(line[9]) || !is_digit(line[10]) ||
      !is_digit(line[11])) {
    return parse_error(502, "malformed status line");
  }
  if (parse_version(line.substr(0, 8), &out->version_minor).status != ParseStatus::kComplete) {
    return parse_error(502, "unsupported HTTP version in status line");
  }
  out->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (out->status < 100) {
    return parse_error(502, "malformed status line");
  }
  if (line.size() > 12) {
    if (line[12] != ' ') {
      return parse_error(502, "malformed status line");
    }
    out->reason = line.substr(13);
  }
  return parse_complete(0);
}

// RFC 9112 6.3 rules 1 and 2: these responses never have a body, whatever the fields say.
bool never_has_body(int status, Method request_method) {
  return request_method == Method::kHead || status < 200 || status == 204 || status == 304 ||
         (request_method == Method::kConnect && status < 300);
}

ParseResult finish_response(const FieldSummary& s, Method request_method, http::ResponseHead* out) {
  // Framing fields are checked even where they are then ignored: a peer that sends
  // contradictory framing is not one to keep talking to.
  Framing f = decide_framing(s, /*allow_equal_cl=*/true);
  if (f.error_status != 0) {
    return parse_error(502, f.error);
  }
  bool v11 = out->version_minor == 1;
  out->keep_alive = v11 ? !s.conn_close : (s.conn_keep_alive && !s.conn_close);
  if (never_has_body(out->status, request_method)) {
    out->body_kind = BodyKind::kNone;
    return parse_complete(0);
  }
  out->body_kind = f.kind;
  out->content_length = f.length;
  if (f.kind == BodyKind::kUntilClose) {
    out->keep_alive = false;
  }
  return parse_complete(0);
}

ParseResult parse_response_head(std::string_view view, const Limits& limits, Method request_method,
                                http::ResponseHead* out) {
  const char* begin = view.data();
  const char* end = begin + view.size();
  bool capped = view.size() > limits.max_request_line;
  const char* scan_end = capped ? begin + limits.max_request_line + 1 : end;
  const char* stop = find_line_stop(begin, scan_end);
  if (stop == scan_end) {
    return capped ? parse_error(502, "status line too long") : parse_incomplete();
  }
  ParseResult r = check_crlf(stop, end);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  r = parse_status_line(std::string_view(begin, static_cast<size_t>(stop - begin)), out);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  FieldSummary s;
  const char* fields = stop + 2;
  size_t max_fields = std::min(limits.max_headers, http::kMaxHeaders);
  r = parse_fields(fields, end, max_fields, out->headers, &out->num_headers, &s);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  size_t consumed = static_cast<size_t>(fields - begin) + r.consumed;
  if (r = finish_response(s, request_method, out); r.status != ParseStatus::kComplete) {
    return r;
  }
  return parse_complete(consumed);
}

}  // namespace

ParseResult parse_response(std::string_view buf, const Limits& limits, Method request_method,
                           http::ResponseHead* out) {
  reset_response(out);
  std::string_view view = buf.substr(0, limits.max_header_bytes);
  ParseResult r = parse_response_head(view, limits, request_method, out);
  if (r.status == ParseStatus::kIncomplete && buf.size() > view.size()) {
    return parse_error(502, "response head too large");
  }
  if (r.status == ParseStatus::kError) {
    r.error_status = 502;
  }
  return r;
}

}  // namespace sluice::h1
