#include "plugins/gzip/coding.h"

#include <charconv>

#include "http/message.h"

namespace sluice::plugins::coding {

using common::Status;
using common::StatusOr;
using plugin::Context;
using plugin::Json;

namespace {

bool ows(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && ows(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && ows(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// RFC 9110 12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ). Whether it
// is above 0; a malformed one counts as 1, the default, as most servers read it.
bool q_positive(std::string_view q) {
  if (q.empty() || q[0] != '0') {
    return true;
  }
  for (char c : q.substr(1)) {
    if (c != '.' && c != '0') {
      return true;
    }
  }
  return false;
}

// One element `coding *( OWS ";" OWS param )`: its coding, and whether its q is above 0.
std::string_view element(std::string_view e, bool* positive) {
  *positive = true;
  size_t semi = e.find(';');
  std::string_view coding = trim(e.substr(0, semi));
  while (semi != std::string_view::npos) {
    e.remove_prefix(semi + 1);
    semi = e.find(';');
    std::string_view param = trim(e.substr(0, semi));
    size_t eq = param.find('=');
    if (eq != std::string_view::npos && http::iequals(trim(param.substr(0, eq)), "q")) {
      *positive = q_positive(trim(param.substr(eq + 1)));
    }
  }
  return coding;
}

StatusOr<bool> http_version(const Json& v) {
  // enum {1.1, 1.0}: any JSON number equal to one of them (Lua compares numbers).
  if (v.is_number()) {
    double d = v.get<double>();
    if (d == 1.1 || d == 1.0) {
      return d == 1.0;
    }
  }
  return Status::error("matches none of the enum values");
}

StatusOr<Common> types(const Json& v, Common c) {
  if (v.is_string() && v.get_ref<const std::string&>() == "*") {
    c.any_type = true;
    c.types.clear();
    return c;
  }
  // anyOf {array of non-empty strings (repeats allowed), enum "*"}: jsonschema names no branch.
  auto none = Status::error("object matches none of the required");
  if (!v.is_array() || v.empty()) {
    return none;
  }
  c.any_type = false;
  c.types.clear();
  for (const Json& t : v) {
    if (!t.is_string() || t.get_ref<const std::string&>().empty()) {
      return none;
    }
    c.types.push_back(t.get<std::string>());
  }
  return c;
}

}  // namespace

uint8_t parse_accept_encoding(std::string_view value) {
  // 0: not listed, 1: listed with q = 0, 2: listed with q > 0.
  int gzip = 0, br = 0, star = 0;
  while (!value.empty()) {
    size_t comma = value.find(',');
    bool positive = true;
    std::string_view coding = element(value.substr(0, comma), &positive);
    int mark = positive ? 2 : 1;
    if (http::iequals(coding, "gzip") || http::iequals(coding, "x-gzip")) {
      gzip = std::max(gzip, mark);
    } else if (http::iequals(coding, "br")) {
      br = std::max(br, mark);
    } else if (coding == "*") {
      star = std::max(star, mark);
    }
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
  }
  uint8_t out = 0;
  if (gzip == 2 || (gzip == 0 && star == 2)) {
    out |= kGzip;
  }
  if (br == 2 || (br == 0 && star == 2)) {
    out |= kBr;
  }
  return out;
}

void read_head(Context& ctx) {
  if ((ctx.coding & kRead) != 0 || ctx.req == nullptr) {
    return;
  }
  uint8_t bits = kRead;
  const http::RequestHead& req = *ctx.req;
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (http::iequals(req.headers[i].name, "accept-encoding")) {
      bits |= parse_accept_encoding(req.headers[i].value);
    }
  }
  if (req.version_minor == 0) {
    bits |= kHttp10;
  }
  if (req.method == http::Method::kHead) {
    bits |= kHead;
  }
  ctx.coding = bits;
}

void decode_common(schema::FieldDecoder& d, Common* c) {
  d.field("types", c, [c](const Json& v) { return types(v, *c); });
  d.field("min_length", &c->min_length,
          [](const Json& v) { return schema::as_integer(v, 1, INT64_MAX); });
  d.field("http_version", &c->http10, http_version);
  d.field("vary", &c->vary, schema::as_bool);
}

bool type_matches(const Common& c, std::string_view content_type) {
  if (c.any_type) {
    return true;
  }
  std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  for (const std::string& t : c.types) {
    if (http::iequals(type, t)) {
      return true;
    }
  }
  return false;
}

bool final_header(const Context& ctx, std::string_view name, std::string_view* out) {
  const std::string* edited = nullptr;
  if (ctx.resp.headers.lookup(name, &edited)) {
    if (edited == nullptr) {
      return false;
    }
    *out = *edited;
    return true;
  }
  if (ctx.resp.headers.drops(name)) {
    return false;
  }
  if (ctx.upstream_resp != nullptr) {
    if (const http::Header* h = ctx.upstream_resp->find(name); h != nullptr) {
      *out = h->value;
      return true;
    }
  } else if (ctx.reply_source != nullptr) {  // a plugin's streamed answer (a cache hit)
    for (const http::Header& h : ctx.reply_fields) {
      if (http::iequals(h.name, name)) {
        *out = h.value;
        return true;
      }
    }
  }
  return false;
}

int64_t final_length(const Context& ctx) {
  if (ctx.resp.content_length >= 0) {
    return ctx.resp.content_length;
  }
  if (ctx.resp.body_changes) {
    return -1;
  }
  if (ctx.upstream_resp == nullptr) {
    return ctx.reply_source != nullptr ? ctx.reply_length : -1;
  }
  const http::ResponseHead& up = *ctx.upstream_resp;
  if (up.body_kind == http::BodyKind::kNone) {
    return 0;  // Content-Length: 0 (or no body at all): nothing to compress
  }
  return up.body_kind == http::BodyKind::kLength ? static_cast<int64_t>(up.content_length) : -1;
}

int final_status(const Context& ctx) { return ctx.resp.status != 0 ? ctx.resp.status : ctx.status; }

std::string_view reply_type(const Context& ctx, std::string_view body) {
  std::string_view type;
  if (final_header(ctx, "content-type", &type)) {
    return type;
  }
  if (ctx.resp.headers.drops("content-type") || body.empty()) {
    return {};
  }
  return body.front() == '{' ? "application/json" : "text/plain";
}

bool head_qualifies(const Common& c, const Context& ctx, bool* type_later) {
  *type_later = false;
  if ((ctx.coding & kHttp10) != 0 && !c.http10) {
    return false;
  }
  std::string_view type;
  if (final_header(ctx, "content-type", &type)) {
    if (!type_matches(c, type)) {
      return false;
    }
  } else if (ctx.upstream_resp == nullptr && ctx.reply_source == nullptr) {
    *type_later = true;  // Exchange::reply() picks it from the body
  } else {
    return false;  // like nginx, no Content-Type: no compression
  }
  int64_t length = final_length(ctx);
  return length < 0 || length >= c.min_length;  // nginx tests only a known length
}

bool final_qualifies(const Common& c, const Context& ctx, bool nginx_statuses) {
  int status = final_status(ctx);
  bool bodiless = status < 200 || status == 204 || status == 304 || (ctx.coding & kHead) != 0;
  // A 206's Content-Range counts bytes of the identity body: never compressed.
  if (bodiless || status == 206 ||
      (nginx_statuses && status != 200 && status != 403 && status != 404)) {
    return false;
  }
  std::string_view encoding;
  if (final_header(ctx, "content-encoding", &encoding) && !encoding.empty()) {
    return false;
  }
  bool type_later = false;
  return head_qualifies(c, ctx, &type_later);
}

void edit_head(Context& ctx, std::string_view encoding) {
  ctx.resp.headers.set("Content-Encoding", encoding);
  ctx.resp.headers.remove("Accept-Ranges");
  ctx.resp.body_changes = true;
  ctx.resp.content_length = -1;
  std::string_view etag;
  if (final_header(ctx, "etag", &etag) && !etag.starts_with("W/")) {
    if (etag.starts_with('"')) {
      std::string& weak = ctx.scratch;
      weak.assign("W/").append(etag);
      ctx.resp.headers.set("ETag", weak);
    } else {
      ctx.resp.headers.remove("ETag");
    }
  }
}

}  // namespace sluice::plugins::coding
