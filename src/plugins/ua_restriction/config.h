#pragma once
// ua-restriction's conf, typed and checked with the texts of APISIX 3.x's schema and
// check_schema; each pattern compiled (PCRE2, JIT) here, once.

#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/proxy_rewrite/regex_rule.h"

namespace sluice::plugins::ua_restriction {

// Exactly one of `allowlist` and `denylist` was given (APISIX 3.x's oneOf); `rules` holds it.
// Thread: any (immutable after parse)
struct Conf {
  bool allow = false;  // true: a User-Agent must match a rule; false: one that does is refused
  std::vector<proxy_rewrite::RegexRule> rules;
  bool bypass_missing = false;
  std::string message = "Not allowed";
};

// Errors are the text after APISIX's `... plugin ua-restriction err: `, e.g.
// `value should match only one schema, but matches both schemas 1 and 2`,
// `pcre2_compile() failed: missing closing parenthesis in "(abc"`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/ua-restriction.
extern const char kSchema[];

}  // namespace sluice::plugins::ua_restriction
