#pragma once
// A header value with nginx variables in it, as APISIX's core.utils.resolve_var reads it:
// `$name` (name: letters, digits, '_' and '.') or `${name}` / `${name ?? default}`; a `$`
// right after a backslash stays text (the backslash too). Parsed once at config time; only
// the variables Sluice can give a value are accepted.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugin/plugin.h"
#include "router/expr.h"

namespace sluice::plugins::response_rewrite {

// Thread: any (immutable)
class ValueTemplate {
 public:
  ValueTemplate() = default;
  // A value without variables.
  static ValueTemplate literal(std::string text);
  // Errors name the variable Sluice cannot resolve: `variable $foo is not supported by
  // Sluice`.
  static common::StatusOr<ValueTemplate> parse(std::string_view text);

  bool is_literal() const { return parts_.empty(); }
  const std::string& text() const { return text_; }  // the whole value when literal
  // Writes the value for this response into *out (cleared first). `m` carries the response
  // (MatchContext::resp) for status, sent_http_*, ...
  void render(const plugin::Context& ctx, const router::MatchContext& m, std::string* out) const;

 private:
  // Where a variable's value comes from: the router's variables or the plugin context.
  enum class Source : uint8_t {
    kText,
    kRouter,
    kRouteId,
    kRouteName,
    kServiceId,
    kServiceName,
    kConsumerName,
    kConsumerGroupId,
    kBalancerIp,
    kBalancerPort,
  };
  struct Part {
    Source source = Source::kText;
    std::string text;  // kText: the text; a variable: its default
    bool has_default = false;
    router::Var var;  // kRouter
  };
  static common::StatusOr<Part> variable(std::string_view name, std::string_view fallback,
                                         bool has_default);
  // A variable's value, or false when nil.
  static bool lookup(const Part& p, const plugin::Context& ctx, const router::MatchContext& m,
                     router::VarScratch* scratch, std::string_view* out);

  std::string text_;
  std::vector<Part> parts_;  // empty: literal text_
};

}  // namespace sluice::plugins::response_rewrite
