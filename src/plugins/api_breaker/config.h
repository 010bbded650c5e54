#pragma once
// api-breaker's conf, typed and checked with APISIX's schema and error texts.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/response_rewrite/value_template.h"

namespace sluice::plugins::api_breaker {

// Thread: any (value type)
struct Conf {
  int break_response_code = 0;
  bool has_body = false;
  std::string break_response_body;
  // {key, value}; values may hold `$var`s (APISIX resolves them with core.utils.resolve_var).
  std::vector<std::pair<std::string, response_rewrite::ValueTemplate>> break_response_headers;
  uint64_t max_breaker_sec = 300;
  std::vector<int> unhealthy_statuses{500};
  uint64_t failures = 3;
  std::vector<int> healthy_statuses{200};
  uint64_t successes = 3;
};

// Errors are the text after `... plugin api-breaker err: `, e.g. `property
// "break_response_code" is required`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::api_breaker
