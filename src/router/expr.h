#pragma once
// Expr: a compiled APISIX `vars` expression (lua-resty-expr semantics) and the request view it
// is evaluated against.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "common/status.h"
#include "http/message.h"
#include "router/ip.h"

namespace sluice::router {

// Thread: worker. What a route match looks at besides the request head. remote_addr and
// remote_ip are the same client address, as text and parsed.
struct MatchContext {
  const http::RequestHead* req = nullptr;
  std::string_view remote_addr;
  IpAddr remote_ip;
  uint16_t server_port = 0;
};

struct ExprProgram;  // expr_program.h
struct ExprLeaf;     // expr_program.h

// Room for the variables whose value is not a view into the request (host, server_port).
struct VarScratch {
  char host[256];
  char port[8];
};

// A variable read by name, with the names and values `vars` uses (limit-count's `key`).
// Thread: any (immutable)
class Var {
 public:
  Var() = default;                          // nil
  static Var parse(std::string_view name);  // an unknown name is nil
  bool nil() const;
  // The value, or false when nil or empty; `out` may point into `scratch`.
  bool get(const MatchContext& ctx, VarScratch* scratch, std::string_view* out) const;

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
// (query without '?'), host (no port, lower-case), remote_addr, request_method, server_port. Any other variable is nil.
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

 private:
  std::shared_ptr<const ExprProgram> program_;
};

}  // namespace sluice::router
