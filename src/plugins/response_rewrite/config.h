#pragma once
// response-rewrite's conf, checked with APISIX's schema and error texts and built once: the
// body decoded, header values parsed, `vars` and `filters` compiled.

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/response_rewrite/body_filters.h"
#include "plugins/response_rewrite/headers.h"
#include "router/expr.h"

namespace sluice::plugins::response_rewrite {

// Thread: any (immutable once built)
struct Conf {
  int status_code = 0;  // 0: the response's own
  bool has_body = false;
  std::string body;  // as sent: base64-decoded when body_base64
  bool has_headers = false;
  HeaderOps headers;
  router::Expr vars;  // empty: rewrite every response
  std::vector<BodyFilter> filters;
};

// Errors are the text after APISIX's `... plugin response-rewrite err: `, e.g.
// `property "status_code" validation failed: expected 599 to be at most 598`,
// `invalid base64 content`, `invalid type as header value`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// nginx's ngx_decode_base64 (what ngx.decode_base64 calls): the standard alphabet, read up to
// the first '=' (whatever follows is ignored), padding optional; false on any other byte or
// on a length that leaves one odd character.
bool decode_base64(std::string_view in, std::string* out);

// The JSON schema served by GET /apisix/admin/plugins/response-rewrite.
extern const char kSchema[];

}  // namespace sluice::plugins::response_rewrite
