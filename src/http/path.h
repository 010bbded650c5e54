#pragma once
// normalize_path: the request path as nginx's $uri (ngx_http_parse_complex_uri with
// merge_slashes on), which is what APISIX routes on, refusing what could mean one path to the
// gateway and another to the upstream. The rules and why: docs/routing.md.

#include <string_view>

namespace sluice::http {

// The outcome of normalize_path: `path` on success, else `error` (a static reason for logs).
struct NormalizedPath {
  std::string_view path;
  const char* error = nullptr;
  bool ok() const { return error == nullptr; }
};

// `raw` is a path as sent (no query): it must start with '/'. When nothing changes the result
// is `raw` itself and `buf` is not touched; otherwise the result lives in `buf`, which must
// have room for raw.size() bytes (a normalised path is never longer). Never allocates.
//
// Like nginx: %XX escapes (either case) are decoded, and a decoded '/' or '.' takes part in
// slash merging and dot segments as if sent plain (%25, %23 and %3F stay literal '%', '#',
// '?'); repeated slashes are merged; "." segments are dropped and ".." removes the segment
// before it ("/a/b/.." -> "/a/"); ';' is an ordinary byte.
// Refused, as nginx does: a bad escape ("%", "%4", "%zz"), %00, ".." above the root.
// Refused, where nginx accepts, because an upstream may read them differently from the
// gateway: a control byte (decoded %01-%1F, %7F); a backslash, raw or %5C; a raw '#'; a dot
// segment written with an escape (%2e, .%2E); a path with both an encoded slash (%2F) and a
// dot segment; a segment that is "." or ".." before a ';', or "" but not the last one
// (servlet path parameters: "/..;/", "/;x/"); an overlong UTF-8 byte sequence (C0 or C1, E0 80-9F,
// F0 80-8F), the classic disguise of '.', '/' and '\'.
NormalizedPath normalize_path(std::string_view raw, char* buf);

}  // namespace sluice::http
