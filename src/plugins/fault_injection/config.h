#pragma once
// fault-injection's conf, typed and checked with APISIX's schema and error texts.

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/response_rewrite/value_template.h"
#include "router/expr.h"

namespace sluice::plugins::fault_injection {

// Thread: any (value type)
struct Abort {
  bool on = false;
  int http_status = 0;
  bool has_body = false;
  response_rewrite::ValueTemplate body;  // `$remote_addr` etc. resolved per request
  std::vector<std::pair<std::string, response_rewrite::ValueTemplate>> headers;
  int percentage = -1;  // -1: every request
  bool has_vars = false;
  std::vector<router::Expr> vars;  // any one matching is enough (APISIX's vars_match)
};

// Thread: any (value type)
struct Delay {
  bool on = false;
  double duration = 0;  // seconds
  int percentage = -1;
  bool has_vars = false;
  std::vector<router::Expr> vars;
};

// Thread: any (value type)
struct Conf {
  Abort abort;
  Delay delay;
};

// Errors are the text after `... plugin fault-injection err: `, e.g. `expect object to have at
// least 1 properties`, `property "abort" validation failed: property "http_status" is
// required`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::fault_injection
