#pragma once
// The immutable configuration a worker serves from: the compiled route table, the routes'
// resolved targets and the upstreams. Built by config::SnapshotBuilder on the control
// thread, shared with workers as shared_ptr<const Snapshot>; a request pins one for its life.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugin/chain.h"
#include "plugin/consumer.h"
#include "router/route_table.h"
#include "tls/cert_index.h"
#include "upstream/upstream.h"

namespace sluice::snapshot {

// What a matched route does, as apisix/init.lua decides it: a missing plugin_config is 503
// before anything runs, a missing service 404, a missing upstream_id 502 (handle_upstream),
// and no upstream at all 503 (upstream.lua, set_by_route).
enum class RouteTarget {
  kUpstream,             // proxy to `upstream`
  kNoUpstream,           // neither route nor service has one: 503
  kServiceMissing,       // service_id names nothing: 404
  kUpstreamMissing,      // the upstream_id (the route's or its service's) names nothing: 502
  kPluginConfigMissing,  // plugin_config_id names nothing: 503, no route plugin runs
};

// Thread: any (immutable)
struct Route {
  std::string id;
  std::string service_id;
  std::string name, service_name;  // for the prometheus plugin's prefer_name
  // The route's uri patterns and hosts, for plugins that report which one matched.
  std::vector<std::string> uris, hosts;
  // The merged plugins of service, plugin_config and route; null when there are none.
  std::shared_ptr<const plugin::Chain> chain;
  RouteTarget target = RouteTarget::kNoUpstream;
  const upstream::Upstream* upstream = nullptr;  // owned by the Snapshot
  upstream::Timeouts timeouts;                   // route timeout, else the upstream's
  // The route has a `timeout` of its own: it wins over any upstream's, a plugin's choice
  // (traffic-split) included, as APISIX's set_balancer_opts prefers it.
  bool own_timeout = false;
  // enable_websocket, the route's or else its service's: a request asking to upgrade passes
  // its Upgrade on and an upstream's 101 becomes a tunnel.
  bool websocket = false;
};

// Thread: any (immutable)
struct Snapshot {
  uint64_t version = 0;
  router::RouteTable table;
  std::vector<Route> routes;  // RouteSpec::index points here
  std::vector<std::unique_ptr<upstream::Upstream>> upstreams;
  // Every global rule's plugins, run for every request, matched or not; null when none.
  std::shared_ptr<const plugin::Chain> global;
  // The `ssls` objects: server certificates by SNI, client ones by id. Never null once built.
  std::shared_ptr<const tls::CertIndex> certs;
  // Consumers, their credentials and the auth plugins' indexes. Never null once built.
  std::shared_ptr<const plugin::Consumers> consumers;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

}  // namespace sluice::snapshot
