#pragma once
// The semantic checks of `sluice config plan` and `apply`, run on the configuration a file
// would leave (the store's objects with the file's written over them): what APISIX accepts
// without a word and then serves wrongly.
//
// Errors (apply refuses them unless --force):
//   - a reference to nothing: a route's or stream route's upstream_id, service_id or
//     plugin_config_id, a service's upstream_id, a consumer's group_id;
//   - a `$secret://<manager>/<id>/...` reference whose secrets object does not exist.
// Warnings:
//   - a route another route shadows: it matches every request the route matches (the same uris
//     or more, the same hosts and methods or fewer restrictions, no vars/remote_addrs/filter_func
//     of its own) with a higher priority, so the route never serves; the same priority: which
//     one serves is not defined;
//   - an upstream node whose host does not resolve (getaddrinfo, here and now);
//   - a route host no `ssls` object's snis cover, when the HTTPS listener is on;
//   - consumer-restriction naming a consumer, consumer group, service or route that does not
//     exist.

#include <map>
#include <string>
#include <vector>

#include "config/gateway_config.h"

namespace sluice::runtime::config_cli {

// kind ("routes", "credentials", ...) -> id -> object, secrets opened, times left out.
using State = std::map<std::string, std::map<std::string, nlohmann::json>>;

struct Finding {
  bool error = false;
  std::string text;  // "routes/2 is shadowed by routes/1 ..."
};

std::vector<Finding> check_state(const State& s, const config::GatewayConfig& conf);

}  // namespace sluice::runtime::config_cli
