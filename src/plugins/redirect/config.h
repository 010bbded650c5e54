#pragma once
// redirect's conf, typed and checked with APISIX's schema and check_schema texts; the `uri`
// template parsed and the `regex_uri` pattern compiled here, once.

#include <optional>
#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/proxy_rewrite/regex_rule.h"
#include "plugins/redirect/uri_template.h"

namespace sluice::plugins::redirect {

// Exactly one of `uri`, `regex_uri` and `http_to_https` is set (APISIX's oneOf).
// Thread: any (immutable after parse)
struct Conf {
  int ret_code = 302;
  bool has_uri = false;
  UriTemplate uri;
  std::optional<proxy_rewrite::RegexRule> regex_uri;  // pattern and replacement
  bool has_http_to_https = false;
  bool http_to_https = false;
  bool encode_uri = false;
  bool append_query_string = false;
};

// Errors are the text after APISIX's `... plugin redirect err: `, e.g.
// `value should match only one schema, but matches both schemas 1 and 3`,
// `invalid regex_uri (^/(a, /$1), err:pcre2_compile() failed: missing closing parenthesis in
// "^/(a"`, `only one of `http_to_https` and `append_query_string` can be configured.`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/redirect.
extern const char kSchema[];

}  // namespace sluice::plugins::redirect
