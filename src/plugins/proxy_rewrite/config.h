#pragma once
// proxy-rewrite's conf, typed and checked with APISIX's schema and error texts; every regex
// compiled and every template parsed here, once.

#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/proxy_rewrite/header_ops.h"
#include "plugins/proxy_rewrite/regex_rule.h"
#include "plugins/proxy_rewrite/template.h"

namespace sluice::plugins::proxy_rewrite {

// Thread: any (immutable after parse)
struct Conf {
  bool has_uri = false;
  Template uri;  // `uri`, with variables (their '?' escaped)
  std::string uri_text;
  std::string method;                // empty: unchanged
  std::vector<RegexRule> regex_uri;  // pattern/replacement pairs, first match wins
  std::string host;                  // empty: unchanged
  HeaderOps headers;
  bool use_real_request_uri_unsafe = false;
};

// Errors are the text after APISIX's `... plugin proxy-rewrite err: `, e.g.
// `property "uri" validation failed: failed to match pattern "^\\/.*" with "x"`,
// `The length of regex_uri should be an even number`,
// `invalid regex_uri(^/(a, /$1): pcre2_compile() failed: missing closing parenthesis in
// "^/(a"`, `invalid field character in header`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/proxy-rewrite.
extern const char kSchema[];

}  // namespace sluice::plugins::proxy_rewrite
