#pragma once
// Expr: a compiled APISIX `vars` expression (lua-resty-expr semantics) and the request view it
// is evaluated against.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "common/status.h"
#include "http/message.h"
#include "http/tls_info.h"
#include "router/ip.h"

namespace sluice::router {

// The response an expression evaluated in a response phase looks at (response-rewrite's
// `vars`): the variables status, upstream_status, sent_http_* and upstream_http_*.
// Thread: worker
struct ResponseView {
  int status = 0;                                // the status the client will get, as edited so far
  const http::ResponseHead* upstream = nullptr;  // the upstream's head; null: the gateway's answer
  // sent_http_<name>: the header the client will get, `name` as in the variable (lower case,
  // '_' for '-'). Null: the upstream's header.
  bool (*sent_header)(const void* arg, std::string_view name, std::string_view* out) = nullptr;
  const void* arg = nullptr;
};

using TlsInfo = http::TlsInfo;

// Thread: worker. What a route match looks at besides the request head. remote_addr and
// remote_ip are the same client address, as text and parsed. `resp` is set only where an
// expression runs on a response; while routing the response variables are nil.
struct MatchContext {
  const http::RequestHead* req = nullptr;
  std::string_view remote_addr;
  IpAddr remote_ip;
  uint16_t server_port = 0;
  const ResponseView* resp = nullptr;
  const TlsInfo* tls = nullptr;  // null on a plaintext connection
};

// nginx's $http_<name> / $sent_http_<name> lookup: whether header `header` is the one a
// variable suffix `var_name` (lower case, '_' for '-') names.
bool header_name_is(std::string_view header, std::string_view var_name);

struct ExprProgram;  // expr_program.h
struct ExprLeaf;     // expr_program.h

// Room for the variables whose value is not a view into the request (host, server_port,
// status).
struct VarScratch {
  char host[256];
  char port[8];  // server_port's or a status's digits
};

// A variable read by name, with the names and values `vars` uses (limit-count's `key`).
// Thread: any (immutable)
// Why `var` cannot be read (it lives in the request body: post_arg_*, graphql_*), or empty.
std::string_view body_var_reason(std::string_view var);
// The first `$name` / `${name}` in `text` that body_var_reason refuses, or empty.
std::string_view body_var_in_template(std::string_view text);

class Var {
 public:
  Var() = default;                          // nil
  static Var parse(std::string_view name);  // an unknown name is nil
  bool nil() const;
  // The value, or false when nil or empty; `out` may point into `scratch`.
  bool get(const MatchContext& ctx, VarScratch* scratch, std::string_view* out) const;
  // The value, or false when nil; an empty value is found (`${var ?? default}` tells them apart).
  bool find(const MatchContext& ctx, VarScratch* scratch, std::string_view* out) const;
  // Whether the value comes from the request head (arg_*, http_*, uri, ...), which is only
  // readable while MatchContext::req is set.
  bool reads_request_head() const;

 private:
  std::shared_ptr<const ExprLeaf> leaf_;
};

// Thread: any (immutable after compile; copies share the compiled program).
//
// `vars` is a JSON array: [[var, op, val], ...] (AND of all), or ["OR", e1, e2, ...],
// ["AND", ...], ["!OR", ...], ["!AND", ...] at any level; an op may be preceded by "!" to
// negate it: ["arg_x", "!", "==", "1"]. [var, val] is short for [var, "==", val].
//
// Variables: arg_<name> (first query argument with exactly that name, raw value),
// http_<name> (first header whose lower-cased name, '-' read as '_', equals name),
// cookie_<name> (first cookie with exactly that name), uri (the normalised path, no query:
// http/path.h), request_uri (request-target as sent, from the path on), args / query_string
// (query without '?'), host (no port, lower-case), remote_addr, request_method, server_port.
// The connection's: scheme (http | https), https ("on" or empty), and on TLS connections
// ssl_server_name, ssl_protocol, ssl_cipher, ssl_session_reused, ssl_client_verify,
// ssl_client_s_dn, ssl_client_i_dn, ssl_client_serial (nil on plaintext ones).
// On a response (MatchContext::resp): status (as the client will get it), upstream_status
// (nil for the gateway's own answers), sent_http_<name> (a header the client will get),
// upstream_http_<name> (the upstream's). Any other variable is nil, and so is a request-head
// variable when MatchContext::req is null.
//
// Operators: == ~= (strings; a number value compares the variable as a number), > >= < <=
// (numbers; nil or non-numeric is false), ~~ and ~* (PCRE2 search, the latter caseless),
// in (array of strings/numbers, compared as text), has (the variable split on ',' with
// whitespace trimmed contains the value), ipmatch (IP/CIDR or an array of them). A nil
// variable makes every operator false except ~= (and a negation).
class Expr {
 public:
  Expr() = default;  // empty: always true

  // Errors read "failed to validate the 'vars' expression: <why> in <element>".
  static common::StatusOr<Expr> compile(const nlohmann::json& vars);

  // Never allocates (after the first regex match on a thread).
  bool eval(const MatchContext& ctx) const;
  bool empty() const { return program_ == nullptr; }
  // The first variable read from the request head (see Var::reads_request_head), or empty.
  std::string_view request_head_var() const;

 private:
  std::shared_ptr<const ExprProgram> program_;
};

}  // namespace sluice::router
