#pragma once
// cors's conf, typed and checked with the texts of APISIX 3.x's schema and check_schema (the
// origins pattern, `you can not set '*' for other option when 'allow_credential' is true`, the
// regexes compiled); everything a request needs is worked out here, once.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/proxy_rewrite/regex_rule.h"

namespace sluice::plugins::cors {

// allow_origins or timing_allow_origins: `*`, `**` (echo the request's Origin), or one or
// more comma-separated origins.
// Thread: any (immutable after parse)
struct OriginList {
  std::string text;                // as configured
  std::vector<std::string> items;  // the comma-separated origins when there are several
  bool any() const { return text == "*"; }
  bool echo() const { return text == "**"; }
};

// Thread: any (immutable after parse)
struct Conf {
  OriginList allow_origins{"*", {}};
  std::string allow_methods = "*";  // `**` already expanded to APISIX's method list
  std::string allow_headers = "*";
  bool echo_request_headers = false;  // allow_headers `**`
  std::string expose_headers = "*";
  std::string max_age = "5";  // the header's text
  bool allow_credential = false;
  // allow_origins_by_regex: when given, allow_origins is not consulted.
  std::vector<proxy_rewrite::RegexRule> origin_regexes;
  // allow_origins_by_metadata: keys of the plugin_metadata's allow_origins map, in order.
  std::vector<std::string> origins_by_metadata;
  bool has_timing = false;  // timing_allow_origins or its regexes were given
  OriginList timing_allow_origins;
  std::vector<proxy_rewrite::RegexRule> timing_regexes;
};

// Errors are the text after APISIX's `... plugin cors err: `, e.g.
// `property "allow_origins" validation failed: failed to match pattern "<pattern>" with "x"`,
// `you can not set '*' for other option when 'allow_credential' is true`,
// `pcre2_compile() failed: missing closing parenthesis in "(a"`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
// With PluginUse::kMetadata, checks APISIX's metadata_schema ({allow_origins: {key: origins}}).
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The origins of a plugin_metadata `allow_origins` value (checked by check()).
common::StatusOr<OriginList> origin_list(const plugin::Json& v);

// Whether `text` matches APISIX's origins pattern `^(\*|\*\*|null|\w+://[^,]+(,\w+://[^,]+)*)$`.
bool origins_pattern(std::string_view text);

extern const char kSchema[];

}  // namespace sluice::plugins::cors
