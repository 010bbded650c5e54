#pragma once
// The key a limit plugin counts by (limit-count, limit-req, limit-conn share APISIX's rules):
// key_type `var` reads one variable, `var_combination` fills "$a-${b}" with variables,
// `constant` is the text itself. An empty value falls back to the client address, as APISIX's
// `key == nil` does.

#include <string>
#include <string_view>
#include <vector>

#include "plugin/plugin.h"
#include "plugins/limit_count/config.h"
#include "router/expr.h"

namespace sluice::plugins::limit_count {

// Thread: any (immutable)
class KeyBuilder {
 public:
  KeyBuilder() = default;
  KeyBuilder(KeyType type, std::string key);

  // The key's value for this request. It may point into `out` (cleared first) or into the
  // conf. `per_route` (a consumer's conf) puts "<route id>&" in front, as APISIX's conf_type
  // "route&consumer" keys it.
  std::string_view build(plugin::Context& ctx, std::string& out, bool per_route = false) const;

 private:
  // One piece of a var_combination key: literal text, or a variable.
  struct Part {
    std::string text;
    router::Var var;
    bool is_var = false;
  };
  static std::string_view var_value(const Part& p, plugin::Context& ctx, router::VarScratch* s);

  KeyType type_ = KeyType::kVar;
  std::string key_;
  std::vector<Part> parts_;  // key_type var (one var) or var_combination
};

}  // namespace sluice::plugins::limit_count
