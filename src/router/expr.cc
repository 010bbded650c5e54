#include "router/expr.h"

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "router/expr_program.h"
#include "router/text.h"

namespace sluice::router {

// Variables APISIX reads from the request body (post_arg_* from form and JSON bodies, graphql_*
// from a GraphQL query). Sluice matches before the body is read, so such a rule could never
// match: it is refused rather than stored.
std::string_view body_var_reason(std::string_view var) {
  if (var.starts_with("post_arg_")) {
    return "matching on the request body is not implemented";
  }
  if (var == "graphql_operation" || var == "graphql_name" || var == "graphql_root_fields") {
    return "matching on the request body (GraphQL) is not implemented";
  }
  return {};
}

std::string_view body_var_in_template(std::string_view k) {
  for (size_t at = k.find('$'); at != std::string_view::npos; at = k.find('$', at + 1)) {
    size_t start = at + 1 < k.size() && k[at + 1] == '{' ? at + 2 : at + 1;
    size_t end = start;
    while (end < k.size() && (std::isalnum(static_cast<unsigned char>(k[end])) || k[end] == '_')) {
      ++end;
    }
    std::string_view name = k.substr(start, end - start);
    if (!body_var_reason(name).empty()) {
      return name;
    }
  }
  return {};
}

namespace {

using common::Status;
using Json = nlohmann::json;

constexpr int kMaxDepth = 32;
constexpr size_t kMaxQuotedElement = 200;

struct OpName {
  std::string_view name;
  Op op;
  bool caseless;
};
constexpr std::array<OpName, 11> kOps = {{
    {"==", Op::kEq, false},
    {"~=", Op::kNe, false},
    {">", Op::kGt, false},
    {">=", Op::kGe, false},
    {"<", Op::kLt, false},
    {"<=", Op::kLe, false},
    {"~~", Op::kRegex, false},
    {"~*", Op::kRegex, true},
    {"in", Op::kIn, false},
    {"has", Op::kHas, false},
    {"ipmatch", Op::kIpMatch, false},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return ascii_lower(c); });
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; });
  return out;
}

// "AND", "OR", "!AND", "!OR" in any case.
bool is_logic_op(const Json& j, ExprNode* node) {
  if (!j.is_string()) {
    return false;
  }
  const std::string op = upper(j.get_ref<const std::string&>());
  const bool negate = op.starts_with('!');
  const std::string_view name = std::string_view(op).substr(negate ? 1 : 0);
  if (name != "AND" && name != "OR") {
    return false;
  }
  node->kind = name == "OR" ? ExprNode::Kind::kOr : ExprNode::Kind::kAnd;
  node->negate = negate;
  return true;
}

const OpName* find_op(const Json& j) {
  if (!j.is_string()) {
    return nullptr;
  }
  const std::string name = lower(j.get_ref<const std::string&>());
  for (const OpName& op : kOps) {
    if (op.name == name) {
      return &op;
    }
  }
  return nullptr;
}

std::string quote(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > kMaxQuotedElement) {
    size_t cut = kMaxQuotedElement;
    // Never cut a UTF-8 sequence in half: the text ends up in a JSON error body.
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
      --cut;
    }
    s.resize(cut);
    s += "...";
  }
  return s;
}

Status fail(std::string_view why, const Json& element) {
  return Status::error("failed to validate the 'vars' expression: " + std::string(why) + " in " +
                       quote(element));
}

void resolve_var(std::string_view var, ExprLeaf* leaf) {
  struct Fixed {
    std::string_view name;
    VarKind kind;
  };
  static constexpr std::array<Fixed, 20> kFixed = {{
      {"uri", VarKind::kUri},
      {"request_uri", VarKind::kRequestUri},
      {"args", VarKind::kArgs},
      {"query_string", VarKind::kArgs},
      {"host", VarKind::kHost},
      {"remote_addr", VarKind::kRemoteAddr},
      {"request_method", VarKind::kRequestMethod},
      {"server_port", VarKind::kServerPort},
      {"status", VarKind::kStatus},
      {"upstream_status", VarKind::kUpstreamStatus},
      {"scheme", VarKind::kScheme},
      {"https", VarKind::kHttps},
      {"ssl_server_name", VarKind::kSslServerName},
      {"ssl_protocol", VarKind::kSslProtocol},
      {"ssl_cipher", VarKind::kSslCipher},
      {"ssl_session_reused", VarKind::kSslSessionReused},
      {"ssl_client_verify", VarKind::kSslClientVerify},
      {"ssl_client_s_dn", VarKind::kSslClientSDn},
      {"ssl_client_i_dn", VarKind::kSslClientIDn},
      {"ssl_client_serial", VarKind::kSslClientSerial},
  }};
  for (const Fixed& f : kFixed) {
    if (f.name == var) {
      leaf->var = f.kind;
      return;
    }
  }
  if (var.starts_with("arg_") && var.size() > 4) {
    leaf->var = VarKind::kArg;
    leaf->name = std::string(var.substr(4));
  } else if (var.starts_with("http_") && var.size() > 5) {
    leaf->var = VarKind::kHttp;
    // APISIX's ctx.lua lowers an http_* name and turns '-' into '_' before asking nginx, so
    // `http_user-id` reads the User-Id header (traffic-split's documented example).
    leaf->name = lower(var.substr(5));
    std::replace(leaf->name.begin(), leaf->name.end(), '-', '_');
  } else if (var.starts_with("cookie_") && var.size() > 7) {
    leaf->var = VarKind::kCookie;
    leaf->name = std::string(var.substr(7));
  } else if (var.starts_with("sent_http_") && var.size() > 10) {
    leaf->var = VarKind::kSentHttp;
    leaf->name = lower(var.substr(10));
  } else if (var.starts_with("upstream_http_") && var.size() > 14) {
    leaf->var = VarKind::kUpstreamHttp;
    leaf->name = lower(var.substr(14));
  } else {
    leaf->var = VarKind::kNil;
  }
}

// Decimal text of a JSON number as Lua's tostring would print it for integers.
bool scalar_text(const Json& j, std::string* out) {
  if (j.is_string()) {
    *out = j.get<std::string>();
  } else if (j.is_number_integer()) {
    *out = j.dump();
  } else if (j.is_number_float()) {
    const double d = j.get<double>();
    const bool integral = d > -1e15 && d < 1e15 && d == static_cast<double>(int64_t(d));
    *out = integral ? std::to_string(int64_t(d)) : j.dump();
  } else {
    return false;
  }
  return true;
}

Status compile_regex(const Json& val, bool caseless, const Json& element, ExprLeaf* leaf) {
  if (!val.is_string()) {
    return fail("regex must be a string", element);
  }
  const std::string& pattern = val.get_ref<const std::string&>();
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   caseless ? PCRE2_CASELESS : 0, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return fail("invalid regex '" + pattern + "': " + reinterpret_cast<const char*>(msg) +
                    " at offset " + std::to_string(offset),
                element);
  }
  leaf->regex.reset(code);
  leaf->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return Status::ok();
}

// Elements that are neither strings nor numbers can never equal a variable; they are dropped.
Status compile_in(const Json& val, const Json& element, ExprLeaf* leaf) {
  if (!val.is_array()) {
    return fail("'in' needs an array value", element);
  }
  for (const Json& item : val) {
    std::string text;
    if (scalar_text(item, &text)) {
      leaf->list.push_back(std::move(text));
    }
  }
  return Status::ok();
}

Status compile_ipmatch(const Json& val, const Json& element, ExprLeaf* leaf) {
  const Json list = val.is_array() ? val : Json::array({val});
  if (list.empty()) {
    return fail("invalid ip address", element);
  }
  for (const Json& item : list) {
    if (!item.is_string()) {
      return fail("invalid ip address", element);
    }
    auto cidr = parse_cidr(item.get_ref<const std::string&>());
    if (!cidr.is_ok()) {
      return fail(cidr.status().message(), element);
    }
    leaf->cidrs.push_back(*cidr);
  }
  return Status::ok();
}

Status compile_value(const Json& val, bool caseless, const Json& element, ExprLeaf* leaf) {
  switch (leaf->op) {
    case Op::kEq:
    case Op::kNe:
      if (val.is_string()) {
        leaf->text = val.get<std::string>();
      } else if (val.is_number()) {
        leaf->value_kind = ValueKind::kNumber;
        leaf->number = val.get<double>();
      } else {
        leaf->value_kind = val.is_null() ? ValueKind::kNull : ValueKind::kOther;
      }
      return Status::ok();
    case Op::kGt:
    case Op::kGe:
    case Op::kLt:
    case Op::kLe:
      leaf->number = std::numeric_limits<double>::quiet_NaN();
      if (val.is_number()) {
        leaf->number = val.get<double>();
      } else if (val.is_string()) {
        parse_number(val.get_ref<const std::string&>(), &leaf->number);
      }
      return Status::ok();
    case Op::kRegex:
      return compile_regex(val, caseless, element, leaf);
    case Op::kIn:
      return compile_in(val, element, leaf);
    case Op::kHas:
      if (!scalar_text(val, &leaf->text)) {
        return fail("'has' needs a string value", element);
      }
      return Status::ok();
    case Op::kIpMatch:
      return compile_ipmatch(val, element, leaf);
  }
  return Status::ok();
}

class Compiler {
 public:
  explicit Compiler(ExprProgram* program) : p_(program) {}

  common::StatusOr<uint32_t> compile(const Json& rule, int depth);

 private:
  common::StatusOr<uint32_t> compile_logic(const Json& rule, size_t first, ExprNode node,
                                           int depth);
  common::StatusOr<uint32_t> compile_leaf(const Json& rule);
  uint32_t add(ExprNode node) {
    p_->nodes.push_back(node);
    return static_cast<uint32_t>(p_->nodes.size() - 1);
  }

  ExprProgram* p_;
};

common::StatusOr<uint32_t> Compiler::compile(const Json& rule, int depth) {
  if (depth > kMaxDepth) {
    return fail("rule nested too deeply", rule);
  }
  if (!rule.is_array()) {
    return fail("invalid expression", rule);
  }
  if (rule.empty()) {
    return fail("rule too short", rule);
  }
  if (rule[0].is_array()) {
    return compile_logic(rule, 0, ExprNode{ExprNode::Kind::kAnd}, depth);
  }
  ExprNode logic;
  if (is_logic_op(rule[0], &logic)) {
    if (rule.size() <= 2) {
      return fail("rule too short", rule);
    }
    return compile_logic(rule, 1, logic, depth);
  }
  return compile_leaf(rule);
}

common::StatusOr<uint32_t> Compiler::compile_logic(const Json& rule, size_t first, ExprNode node,
                                                   int depth) {
  std::vector<uint32_t> kids;
  for (size_t i = first; i < rule.size(); ++i) {
    auto kid = compile(rule[i], depth + 1);
    if (!kid.is_ok()) {
      return kid.status();
    }
    kids.push_back(*kid);
  }
  node.begin = static_cast<uint32_t>(p_->children.size());
  p_->children.insert(p_->children.end(), kids.begin(), kids.end());
  node.end = static_cast<uint32_t>(p_->children.size());
  return add(node);
}

common::StatusOr<uint32_t> Compiler::compile_leaf(const Json& rule) {
  if (rule.size() < 2 || rule.size() > 4) {
    return fail("invalid expression", rule);
  }
  ExprNode node{ExprNode::Kind::kLeaf};
  size_t op_at = 1;
  if (rule.size() == 4) {
    if (!rule[1].is_string() || rule[1].get_ref<const std::string&>() != "!") {
      return fail("bad 'not' expression", rule);
    }
    node.negate = true;
    op_at = 2;
  }
  if (!rule[0].is_string()) {
    return fail("invalid expression", rule);
  }
  const std::string& var = rule[0].get_ref<const std::string&>();
  if (std::string_view why = body_var_reason(var); !why.empty()) {
    return fail("variable " + var + " is not supported yet: " + std::string(why), rule);
  }
  ExprLeaf leaf;
  resolve_var(var, &leaf);
  leaf.var_name = rule[0].get<std::string>();
  const OpName* op = nullptr;
  const Json* val = nullptr;
  if (rule.size() == 2) {  // [var, val]: lua-resty-expr's shorthand for ==
    if (find_op(rule[1]) != nullptr) {
      return fail("invalid expression", rule);
    }
    op = &kOps[0];
    val = &rule[1];
  } else {
    op = find_op(rule[op_at]);
    if (op == nullptr) {
      return fail(
          "invalid operator '" +
              (rule[op_at].is_string() ? rule[op_at].get<std::string>() : quote(rule[op_at])) + "'",
          rule);
    }
    val = &rule[op_at + 1];
  }
  leaf.op = op->op;
  Status st = compile_value(*val, op->caseless, rule, &leaf);
  if (!st.is_ok()) {
    return st;
  }
  node.begin = static_cast<uint32_t>(p_->leaves.size());
  p_->leaves.push_back(std::move(leaf));
  return add(node);
}

}  // namespace

common::StatusOr<Expr> Expr::compile(const Json& vars) {
  if (vars.is_null() || (vars.is_array() && vars.empty())) {
    return Expr();
  }
  if (!vars.is_array()) {
    return fail("rule should be an array", vars);
  }
  ExprNode unused;
  if (!vars[0].is_array() && !is_logic_op(vars[0], &unused)) {
    return fail("rule should be wrapped inside brackets", vars);
  }
  auto program = std::make_shared<ExprProgram>();
  Compiler compiler(program.get());
  auto root = compiler.compile(vars, 0);
  if (!root.is_ok()) {
    return root.status();
  }
  program->root = *root;
  Expr expr;
  expr.program_ = std::move(program);
  return expr;
}

bool Expr::eval(const MatchContext& ctx) const {
  return program_ == nullptr || eval_program(*program_, ctx);
}

std::string_view Expr::request_head_var() const {
  if (program_ != nullptr) {
    for (const ExprLeaf& leaf : program_->leaves) {
      if (reads_request_head(leaf.var)) {
        return leaf.var_name;
      }
    }
  }
  return {};
}

Var Var::parse(std::string_view name) {
  auto leaf = std::make_shared<ExprLeaf>();
  resolve_var(name, leaf.get());
  Var v;
  v.leaf_ = std::move(leaf);
  return v;
}

}  // namespace sluice::router
