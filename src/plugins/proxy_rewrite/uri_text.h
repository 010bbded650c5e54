#pragma once
// The two URI transformations proxy-rewrite makes as nginx makes them: the normalised path
// APISIX reads as `$uri` (ngx.var.uri), and the escaping APISIX applies to the rewritten path
// (core.utils.uri_safe_encode, nginx's ngx_escape_uri with NGX_ESCAPE_URI).

#include <string>
#include <string_view>

namespace sluice::plugins::proxy_rewrite {

// Appends nginx's `$uri` for the raw request path `raw`: %XX sequences decoded (an invalid one
// is kept as it is: nginx would have refused the request), repeated slashes merged, `.` and
// `..` segments resolved (`..` never climbs above the root). A path that does not start with
// '/' is only decoded.
void append_normalized_path(std::string_view raw, std::string* out);

// Appends `in` with the bytes nginx's NGX_ESCAPE_URI escapes written as %XX (upper-case hex):
// control bytes, space, '#', '%', '?', DEL and every byte >= 0x80.
void append_escaped_uri(std::string_view in, std::string* out);

// Appends `in` with the bytes that would break a request line (control bytes, space, DEL)
// written as %XX, the rest untouched: the only escaping use_real_request_uri_unsafe keeps.
void append_wire_safe(std::string_view in, std::string* out);

// Rewrites `*v` with each control byte but HTAB, and DEL, as %XX, so that a value read from
// the request (a decoded path, a capture of it) cannot end the header line. A clean value is
// left as it is, without copying.
void make_header_safe(std::string* v);

}  // namespace sluice::plugins::proxy_rewrite
