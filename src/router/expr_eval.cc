#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

#include "router/expr_program.h"
#include "router/text.h"

namespace sluice::router {

namespace {

using std::string_view;

constexpr string_view kSpaces = " \t";

string_view trim(string_view s) {
  const size_t b = s.find_first_not_of(kSpaces);
  if (b == string_view::npos) {
    return {};
  }
  return s.substr(b, s.find_last_not_of(kSpaces) - b + 1);
}

// Per-evaluation storage for variables that are not plain views into the request.
using Scratch = VarScratch;
static_assert(sizeof(Scratch::host) >= kMaxHostLen);

bool find_arg(string_view query, string_view name, string_view* out) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) {
      *out = eq == string_view::npos ? string_view() : pair.substr(eq + 1);
      return true;
    }
    if (amp == string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return false;
}

bool find_header(const http::RequestHead& req, string_view name, string_view* out) {
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (header_name_is(req.headers[i].name, name)) {
      *out = req.headers[i].value;
      return true;
    }
  }
  return false;
}

bool find_cookie(const http::RequestHead& req, string_view name, string_view* out) {
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (!http::iequals(req.headers[i].name, "cookie")) {
      continue;
    }
    string_view rest = req.headers[i].value;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      const string_view pair = trim(rest.substr(0, semi));
      const size_t eq = pair.find('=');
      if (eq != string_view::npos && trim(pair.substr(0, eq)) == name) {
        *out = trim(pair.substr(eq + 1));
        return true;
      }
      if (semi == string_view::npos) {
        break;
      }
      rest.remove_prefix(semi + 1);
    }
  }
  return false;
}

bool find_response_header(const http::ResponseHead& resp, string_view name, string_view* out) {
  for (size_t i = 0; i < resp.num_headers; ++i) {
    if (header_name_is(resp.headers[i].name, name)) {
      *out = resp.headers[i].value;
      return true;
    }
  }
  return false;
}

string_view status_text(int status, Scratch* scratch) {
  auto res = std::to_chars(scratch->port, scratch->port + sizeof(scratch->port), status);
  return string_view(scratch->port, res.ptr - scratch->port);
}

// status, upstream_status, sent_http_*, upstream_http_*: nil without a response.
bool resolve_response(const ExprLeaf& leaf, const MatchContext& ctx, Scratch* scratch,
                      string_view* out) {
  const ResponseView* resp = ctx.resp;
  if (resp == nullptr) {
    return false;
  }
  switch (leaf.var) {
    case VarKind::kStatus:
      *out = status_text(resp->status, scratch);
      return true;
    case VarKind::kUpstreamStatus:
      if (resp->upstream == nullptr) {
        return false;
      }
      *out = status_text(resp->upstream->status, scratch);
      return true;
    case VarKind::kSentHttp:
      if (resp->sent_header != nullptr) {
        return resp->sent_header(resp->arg, leaf.name, out);
      }
      return resp->upstream != nullptr && find_response_header(*resp->upstream, leaf.name, out);
    case VarKind::kUpstreamHttp:
      return resp->upstream != nullptr && find_response_header(*resp->upstream, leaf.name, out);
    default:
      return false;
  }
}

// nginx's $request_uri: the target as sent, from the path on (an absolute-form target loses
// its scheme and authority).
string_view request_uri(const http::RequestHead& req) {
  if (req.authority.empty() || req.method == http::Method::kConnect) {
    return req.target;
  }
  const size_t sep = req.target.find("://");
  if (sep == string_view::npos) {
    return req.target;
  }
  const string_view rest = req.target.substr(sep + 3 + req.authority.size());
  return rest.empty() ? string_view("/") : rest;
}

// scheme, https and ssl_*: the connection's, readable in every phase.
bool resolve_tls(const ExprLeaf& leaf, const MatchContext& ctx, string_view* out) {
  const TlsInfo* t = ctx.tls;
  if (leaf.var == VarKind::kScheme) {
    *out = t != nullptr ? "https" : "http";
    return true;
  }
  if (leaf.var == VarKind::kHttps) {
    *out = t != nullptr ? "on" : "";
    return true;
  }
  if (t == nullptr) {
    return false;
  }
  switch (leaf.var) {
    case VarKind::kSslServerName:
      *out = t->server_name;
      return !out->empty();
    case VarKind::kSslProtocol:
      *out = t->protocol;
      return true;
    case VarKind::kSslCipher:
      *out = t->cipher;
      return true;
    case VarKind::kSslSessionReused:
      *out = t->session_reused ? "r" : ".";
      return true;
    case VarKind::kSslClientVerify:
      *out = t->client_verify.empty() ? string_view("NONE") : t->client_verify;
      return true;
    case VarKind::kSslClientSDn:
      *out = t->client_s_dn;
      return !out->empty();
    case VarKind::kSslClientIDn:
      *out = t->client_i_dn;
      return !out->empty();
    case VarKind::kSslClientSerial:
      *out = t->client_serial;
      return !out->empty();
    default:
      return false;
  }
}

// The variable's value, or false when it is nil.
bool resolve(const ExprLeaf& leaf, const MatchContext& ctx, Scratch* scratch, string_view* out) {
  if (leaf.var >= VarKind::kScheme) [[unlikely]] {
    if (leaf.var < VarKind::kStatus) {
      return resolve_tls(leaf, ctx, out);
    }
    return resolve_response(leaf, ctx, scratch, out);
  }
  if (ctx.req == nullptr) [[unlikely]] {
    // A response phase after the request head is gone: only the connection's own variables.
    if (leaf.var == VarKind::kRemoteAddr) {
      *out = ctx.remote_addr;
      return !out->empty();
    }
    if (leaf.var == VarKind::kServerPort) {
      *out = status_text(ctx.server_port, scratch);
      return true;
    }
    return false;
  }
  const http::RequestHead& req = *ctx.req;
  switch (leaf.var) {
    case VarKind::kNil:
      return false;
    case VarKind::kArg:
      return find_arg(req.query, leaf.name, out);
    case VarKind::kHttp:
      return find_header(req, leaf.name, out);
    case VarKind::kCookie:
      return find_cookie(req, leaf.name, out);
    case VarKind::kUri:
      *out = req.uri;
      return true;
    case VarKind::kRequestUri:
      *out = request_uri(req);
      return true;
    case VarKind::kArgs:
      *out = req.query;
      return true;
    case VarKind::kHost:
      *out = normalize_host(req.host, scratch->host);
      return !out->empty();
    case VarKind::kRemoteAddr:
      *out = ctx.remote_addr;
      return !out->empty();
    case VarKind::kRequestMethod:
      *out = req.method_text.empty() ? http::method_name(req.method) : req.method_text;
      return true;
    case VarKind::kServerPort:
      *out = status_text(ctx.server_port, scratch);
      return true;
    default:  // the response variables, resolved above
      return false;
  }
}

// pcre2_match_data with room for the whole match only: `~~` needs no captures, and PCRE2
// reports a match even when the ovector is too small for the groups.
struct ThreadMatchData {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  ~ThreadMatchData() { pcre2_match_data_free(data); }
};

bool regex_find(const ExprLeaf& leaf, string_view v) {
  thread_local ThreadMatchData md;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(v.data());
  const int rc = leaf.jit
                     ? pcre2_jit_match(leaf.regex.get(), subject, v.size(), 0, 0, md.data, nullptr)
                     : pcre2_match(leaf.regex.get(), subject, v.size(), 0, 0, md.data, nullptr);
  return rc >= 0;
}

bool ip_match(const ExprLeaf& leaf, const MatchContext& ctx, string_view v) {
  IpAddr ip;
  if (leaf.var == VarKind::kRemoteAddr) {
    ip = ctx.remote_ip;
  } else if (!parse_ip(v, &ip)) {
    return false;
  }
  for (const Cidr& c : leaf.cidrs) {
    if (c.contains(ip)) {
      return true;
    }
  }
  return false;
}

bool equals(const ExprLeaf& leaf, bool present, string_view v) {
  if (!present) {
    return leaf.value_kind == ValueKind::kNull;
  }
  double d = 0;
  switch (leaf.value_kind) {
    case ValueKind::kString:
      return v == leaf.text;
    case ValueKind::kNumber:
      return parse_number(v, &d) && d == leaf.number;
    case ValueKind::kNull:
    case ValueKind::kOther:
      return false;
  }
  return false;
}

bool eval_leaf(const ExprLeaf& leaf, const MatchContext& ctx) {
  Scratch scratch;
  string_view v;
  const bool present = resolve(leaf, ctx, &scratch, &v);
  if (leaf.op == Op::kEq || leaf.op == Op::kNe) {
    return equals(leaf, present, v) == (leaf.op == Op::kEq);
  }
  if (!present) {
    return false;
  }
  double d = 0;
  switch (leaf.op) {
    case Op::kGt:
      return parse_number(v, &d) && d > leaf.number;
    case Op::kGe:
      return parse_number(v, &d) && d >= leaf.number;
    case Op::kLt:
      return parse_number(v, &d) && d < leaf.number;
    case Op::kLe:
      return parse_number(v, &d) && d <= leaf.number;
    case Op::kRegex:
      return regex_find(leaf, v);
    case Op::kIn:
      for (const std::string& item : leaf.list) {
        if (item == v) {
          return true;
        }
      }
      return false;
    case Op::kHas:
      // lua-resty-expr's `has` needs a table on the left. Every variable APISIX resolves
      // here (ngx.var: http_*, arg_*, cookie_*, ...) is a string -- a repeated header too,
      // as nginx joins or picks one -- so `has` never matches, and neither does it here.
      return false;
    case Op::kIpMatch:
      return ip_match(leaf, ctx, v);
    case Op::kEq:
    case Op::kNe:
      break;
  }
  return false;
}

bool eval_node(const ExprProgram& p, uint32_t index, const MatchContext& ctx) {
  const ExprNode& node = p.nodes[index];
  bool result;
  if (node.kind == ExprNode::Kind::kLeaf) {
    result = eval_leaf(p.leaves[node.begin], ctx);
  } else {
    const bool is_or = node.kind == ExprNode::Kind::kOr;
    result = !is_or;
    for (uint32_t i = node.begin; i < node.end; ++i) {
      if (eval_node(p, p.children[i], ctx) == is_or) {
        result = is_or;
        break;
      }
    }
  }
  return result != node.negate;
}

}  // namespace

bool eval_program(const ExprProgram& program, const MatchContext& ctx) {
  return eval_node(program, program.root, ctx);
}

bool parse_number(string_view text, double* out) {
  string_view s = trim(text);
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || !(s[0] == '.' || (s[0] >= '0' && s[0] <= '9'))) {
    return false;  // also rejects "inf" and "nan", as tonumber() does
  }
  double v = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    uint64_t hex = 0;
    auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), hex, 16);
    if (ec != std::errc() || end != s.data() + s.size()) {
      return false;
    }
    v = static_cast<double>(hex);
  } else {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      return false;
    }
  }
  *out = negative ? -v : v;
  return true;
}

bool header_name_is(string_view header, string_view var_name) {
  if (header.size() != var_name.size()) {
    return false;
  }
  for (size_t i = 0; i < header.size(); ++i) {
    const char c = header[i] == '-' ? '_' : ascii_lower(header[i]);
    if (c != var_name[i]) {
      return false;
    }
  }
  return true;
}

bool Var::nil() const { return leaf_ == nullptr || leaf_->var == VarKind::kNil; }

bool Var::reads_request_head() const {
  return leaf_ != nullptr && router::reads_request_head(leaf_->var);
}

bool Var::get(const MatchContext& ctx, VarScratch* scratch, std::string_view* out) const {
  return !nil() && resolve(*leaf_, ctx, scratch, out) && !out->empty();
}

bool Var::find(const MatchContext& ctx, VarScratch* scratch, std::string_view* out) const {
  return !nil() && resolve(*leaf_, ctx, scratch, out);
}

}  // namespace sluice::router
