// parse_request: the request line, its target forms, and the request-specific rules on top of
// the shared field parser (Host, HTTP/1.0 + Transfer-Encoding, Expect).

#include <algorithm>

#include "codec/h1/fields.h"
#include "codec/h1/parser.h"
#include "codec/h1/scan.h"
#include "http/path.h"

namespace sluice::h1 {

namespace {

using http::BodyKind;
using http::Method;

void reset_request(http::RequestHead* out) {
  out->method = Method::kOther;
  out->method_text = out->target = out->path = out->query = out->uri = {};
  out->authority = out->host = {};
  out->version_minor = 1;
  out->version_major = 1;
  out->num_headers = 0;
  out->body_kind = BodyKind::kNone;
  out->content_length = 0;
  out->keep_alive = true;
  out->expect_continue = false;
}

bool is_target_char(char ch) {
  auto c = static_cast<uint8_t>(ch);
  return c > 0x20 && c != 0x7f;
}

// nginx's method alphabet. RFC 9110 9.1 makes methods case-sensitive, so `get` is not GET;
// nginx (and so APISIX) answers it 400, and forwarding it only moves the error upstream.
bool is_method_char(char c) { return (c >= 'A' && c <= 'Z') || c == '_' || c == '-'; }

bool all_digits(std::string_view v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), is_digit);
}

// RFC 9112 2.2: a server SHOULD ignore at least one empty line before the request line.
ParseResult skip_empty_lines(const char* p, const char* end) {
  const char* q = p;
  while (q < end && *q == '\r') {
    if (q + 1 == end) {
      return parse_incomplete();
    }
    if (q[1] != '\n') {
      return parse_error(400, "bare CR");
    }
    q += 2;
  }
  if (q == end) {
    return parse_incomplete();
  }
  return parse_complete(static_cast<size_t>(q - p));
}

void split_path_query(std::string_view pq, http::RequestHead* out) {
  size_t q = pq.find('?');
  out->path = pq.substr(0, q);
  out->query = q == std::string_view::npos ? std::string_view() : pq.substr(q + 1);
}

// Sets out->uri, the path routes match; a path that cannot be normalised safely is a 400.
ParseResult normalize_uri(http::RequestHead* out) {
  std::string& buf = out->uri_buf;
  if (buf.size() < out->path.size()) {
    buf.resize(out->path.size());  // once per exchange at most: the exchange is reused
  }
  const http::NormalizedPath n = http::normalize_path(out->path, buf.data());
  if (!n.ok()) {
    return parse_error(400, n.error);
  }
  out->uri = n.path;
  return parse_complete(0);
}

// scheme "://" authority [path] ["?" query]; only http and https make sense at a gateway.
ParseResult parse_absolute_form(http::RequestHead* out) {
  std::string_view t = out->target;
  size_t sep = t.find("://");
  if (sep == std::string_view::npos ||
      !(equals_lower(t.substr(0, sep), "http") || equals_lower(t.substr(0, sep), "https"))) {
    return parse_error(400, "invalid request-target");
  }
  std::string_view rest = t.substr(sep + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.empty() || !valid_host(authority)) {
    return parse_error(400, "invalid authority in request-target");
  }
  out->authority = authority;
  split_path_query(rest.substr(authority.size()), out);
  if (out->path.empty()) {
    out->path = "/";
  }
  return normalize_uri(out);
}

// CONNECT's target is host:port and nothing else (RFC 9112 3.2.3).
ParseResult parse_authority_form(http::RequestHead* out) {
  std::string_view t = out->target;
  size_t colon = t.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || !valid_host(t) ||
      !all_digits(t.substr(colon + 1))) {
    return parse_error(400, "CONNECT target must be host:port");
  }
  out->authority = t;
  return parse_complete(0);
}

ParseResult parse_target(http::RequestHead* out) {
  std::string_view t = out->target;
  if (t == "*") {
    if (out->method != Method::kOptions) {
      return parse_error(400, "asterisk-form is only for OPTIONS");
    }
    out->path = out->uri = t;
    return parse_complete(0);
  }
  if (out->method == Method::kConnect) {
    return parse_authority_form(out);
  }
  if (t[0] == '/') {
    split_path_query(t, out);
    return normalize_uri(out);
  }
  return parse_absolute_form(out);
}

// method SP request-target SP HTTP-version; `line` has no CRLF and no control byte but HTAB.
ParseResult parse_request_line(std::string_view line, http::RequestHead* out) {
  size_t m = 0;
  while (m < line.size() && is_method_char(line[m])) {
    ++m;
  }
  if (m == 0 || m == line.size() || line[m] != ' ') {
    return parse_error(400, "invalid method");
  }
  size_t t = m + 1;
  size_t e = t;
  while (e < line.size() && is_target_char(line[e])) {
    ++e;
  }
  if (e == line.size()) {
    return parse_error(400, "missing HTTP version");
  }
  if (e == t || line[e] != ' ') {
    return parse_error(400, "invalid request-target");
  }
  out->method_text = line.substr(0, m);
  out->method = http::parse_method(out->method_text);
  out->target = line.substr(t, e - t);
  ParseResult v = parse_version(line.substr(e + 1), &out->version_minor);
  if (v.status != ParseStatus::kComplete) {
    return v;
  }
  return parse_target(out);
}

// underscores_in_headers off, as nginx: fields named with `_` are left out of the head.
void drop_underscored_fields(http::RequestHead* out) {
  size_t kept = 0;
  for (size_t i = 0; i < out->num_headers; ++i) {
    if (out->headers[i].name.find('_') == std::string_view::npos) {
      out->headers[kept++] = out->headers[i];
    }
  }
  out->num_headers = kept;
}

ParseResult finish_request(const FieldSummary& s, http::RequestHead* out) {
  bool v11 = out->version_minor == 1;
  if (s.host_count > 1) {
    return parse_error(400, "multiple Host fields");
  }
  if (v11 && s.host_count == 0) {
    return parse_error(400, "missing Host");
  }
  if (!valid_host(s.host)) {
    return parse_error(400, "invalid Host");
  }
  out->host = out->authority.empty() ? s.host : out->authority;
  if (s.te_present && !v11) {
    return parse_error(400, "Transfer-Encoding in HTTP/1.0");
  }
  Framing f = decide_framing(s, /*allow_equal_cl=*/false);
  if (f.error_status != 0) {
    return parse_error(f.error_status, f.error);
  }
  out->body_kind = f.kind == BodyKind::kUntilClose ? BodyKind::kNone : f.kind;
  out->content_length = f.length;
  out->keep_alive = v11 ? !s.conn_close : (s.conn_keep_alive && !s.conn_close);
  out->expect_continue = v11 && s.expect_continue;
  return parse_complete(0);
}

// The head within `view`, which the caller has already cut at max_header_bytes.
ParseResult parse_request_head(std::string_view view, const Limits& limits,
                               http::RequestHead* out) {
  const char* begin = view.data();
  const char* end = begin + view.size();
  ParseResult r = skip_empty_lines(begin, end);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  const char* line = begin + r.consumed;
  bool capped = static_cast<size_t>(end - line) > limits.max_request_line;
  const char* scan_end = capped ? line + limits.max_request_line + 1 : end;
  const char* stop = find_line_stop(line, scan_end);
  if (stop == scan_end) {
    return capped ? parse_error(414, "request line too long") : parse_incomplete();
  }
  if (r = check_crlf(stop, end); r.status != ParseStatus::kComplete) {
    return r;
  }
  r = parse_request_line(std::string_view(line, static_cast<size_t>(stop - line)), out);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  FieldSummary s;
  const char* fields = stop + 2;
  size_t max_fields = std::min(limits.max_headers, http::kMaxHeaders);
  r = parse_fields(fields, end, max_fields, out->headers, &out->num_headers, &s,
                   /*ignore_invalid_names=*/true);
  if (r.status != ParseStatus::kComplete) {
    return r;
  }
  size_t consumed = static_cast<size_t>(fields - begin) + r.consumed;
  if (r = finish_request(s, out); r.status != ParseStatus::kComplete) {
    return r;
  }
  if (!limits.underscores_in_headers) {
    drop_underscored_fields(out);
  }
  return parse_complete(consumed);
}

}  // namespace

ParseResult parse_request(std::string_view buf, const Limits& limits, http::RequestHead* out) {
  reset_request(out);
  std::string_view view = buf.substr(0, limits.max_header_bytes);
  ParseResult r = parse_request_head(view, limits, out);
  if (r.status == ParseStatus::kIncomplete && buf.size() > view.size()) {
    return parse_error(431, "request head too large");
  }
  return r;
}

}  // namespace sluice::h1
