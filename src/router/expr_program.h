#pragma once
// ExprProgram: the compiled form of a `vars` expression, shared by expr.cc (compile) and
// expr_eval.cc (eval). Internal to the router room.

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "router/expr.h"
#include "router/ip.h"

namespace sluice::router {

enum class VarKind : uint8_t {
  kNil,
  kArg,
  kHttp,
  kCookie,
  kUri,
  kRequestUri,
  kArgs,
  kHost,
  kRemoteAddr,
  kRequestMethod,
  kServerPort,
  // The connection's TLS session (MatchContext::tls) and scheme; no request head needed.
  kScheme,
  kHttps,
  kSslServerName,
  kSslProtocol,
  kSslCipher,
  kSslSessionReused,
  kSslClientVerify,
  kSslClientSDn,
  kSslClientIDn,
  kSslClientSerial,
  // Response variables (MatchContext::resp); every kind from here on reads no request head.
  kStatus,
  kUpstreamStatus,
  kSentHttp,
  kUpstreamHttp,
};

// arg_*, http_*, cookie_*, uri, ...: read from MatchContext::req.
inline bool reads_request_head(VarKind k) {
  return k != VarKind::kNil && k != VarKind::kRemoteAddr && k < VarKind::kServerPort;
}

enum class Op : uint8_t { kEq, kNe, kGt, kGe, kLt, kLe, kRegex, kIn, kHas, kIpMatch };

// The JSON type of the right-hand value of == and ~=.
enum class ValueKind : uint8_t { kString, kNumber, kNull, kOther };

// unique_ptr deleter for a compiled pattern.
struct PcreCodeFree {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};

// Thread: any (immutable once built). One [var, op, val] comparison.
struct ExprLeaf {
  VarKind var = VarKind::kNil;
  Op op = Op::kEq;
  ValueKind value_kind = ValueKind::kString;
  bool jit = false;               // regex was JIT-compiled
  std::string name;               // arg/header/cookie name; header names lower-case
  std::string var_name;           // the variable as written, for error messages
  std::string text;               // string value of == ~= has
  double number = 0;              // numeric value (NaN when the value is not a number)
  std::vector<std::string> list;  // in
  std::vector<Cidr> cidrs;        // ipmatch
  std::unique_ptr<pcre2_code, PcreCodeFree> regex;  // ~~ ~*
};

// Thread: any (immutable once built). An AND/OR over children, or one leaf.
struct ExprNode {
  enum class Kind : uint8_t { kAnd, kOr, kLeaf };
  Kind kind = Kind::kAnd;
  bool negate = false;
  // kLeaf: begin is the index in leaves. kAnd/kOr: children are children[begin, end).
  uint32_t begin = 0;
  uint32_t end = 0;
};

// Thread: any (immutable once built).
struct ExprProgram {
  std::vector<ExprNode> nodes;
  std::vector<uint32_t> children;
  std::vector<ExprLeaf> leaves;
  uint32_t root = 0;
};

bool eval_program(const ExprProgram& program, const MatchContext& ctx);

// Lua's tonumber() on a string, near enough: optional surrounding whitespace, decimal or
// 0x-hex. Never allocates.
bool parse_number(std::string_view text, double* out);

}  // namespace sluice::router
