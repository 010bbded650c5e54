#pragma once
// Typed APISIX resources as decoded from JSON (admin bodies, etcd values) or YAML (apisix.yaml).
// Decoding checks shape, types and ranges; cross-resource links and vars/CIDR compilation
// happen in the SnapshotBuilder.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::config {

using Json = nlohmann::json;

// Thread: any (value type)
struct TimeoutConf {
  double connect = 60;  // seconds, > 0
  double send = 60;
  double read = 60;
};

// Thread: any (value type)
struct UpstreamNodeConf {
  std::string host;  // IPv4/IPv6 literal (no brackets) or a DNS name
  uint16_t port = 80;
  int weight = 1;  // >= 0
  int priority = 0;
};

// Thread: any (value type)
struct KeepalivePoolConf {
  int size = 320;            // >= 1
  double idle_timeout = 60;  // seconds, >= 0
  int requests = 1000;       // >= 1
};

enum class BalancerType { kRoundRobin, kChash, kLeastConn, kEwma };
enum class PassHost { kPass, kNode, kRewrite };

// Thread: any (value type)
struct UpstreamConf {
  std::string id;  // empty for an inline upstream
  std::string name, desc;
  std::map<std::string, std::string> labels;
  BalancerType type = BalancerType::kRoundRobin;
  std::vector<UpstreamNodeConf> nodes;
  std::optional<int> retries;  // >= 0; default: number of nodes - 1
  double retry_timeout = 0;    // seconds, 0 = unlimited
  std::optional<TimeoutConf> timeout;
  KeepalivePoolConf keepalive_pool;
  PassHost pass_host = PassHost::kPass;
  std::string upstream_host;    // required when pass_host == rewrite
  std::string scheme = "http";  // http | https | grpc | grpcs
  std::string hash_on = "vars";
  std::string key;
  Json checks;  // kept verbatim until health checks exist; null when absent
  int64_t create_time = 0, update_time = 0;
};

// Thread: any (value type)
struct RouteConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  std::vector<std::string> uris;          // `uri` folds into this (non-empty after decode)
  std::vector<std::string> hosts;         // `host` folds into this
  std::vector<std::string> remote_addrs;  // `remote_addr` folds into this
  std::vector<std::string> methods;       // upper-case, each one of the APISIX methods
  int priority = 0;
  Json vars;     // null when absent; compiled by the builder
  Json plugins;  // object; null when absent
  std::optional<UpstreamConf> upstream;
  std::string upstream_id, service_id, plugin_config_id;
  std::optional<TimeoutConf> timeout;
  bool enable_websocket = false;
  int status = 1;  // 1 enabled, 0 disabled
  int64_t create_time = 0, update_time = 0;
};

// Thread: any (value type)
struct ServiceConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  Json plugins;
  std::optional<UpstreamConf> upstream;
  std::string upstream_id;
  std::vector<std::string> hosts;
  bool enable_websocket = false;
  int64_t create_time = 0, update_time = 0;
};

// Every resource of one configuration, as decoded. Ids are unique per kind.
// Thread: any (value type)
struct ConfigSet {
  std::vector<RouteConf> routes;
  std::vector<ServiceConf> services;
  std::vector<UpstreamConf> upstreams;
  // Things a reader should tell the operator (kinds present but not served yet).
  std::vector<std::string> warnings;
};

// Each decoder takes one resource object and returns an error whose text follows APISIX:
// `invalid configuration: property "methods" validation failed: ...`, or for unknown
// fields `invalid configuration: additional properties forbidden, found <name>`.
// `id` in the object is accepted as a string (1-64 of [a-zA-Z0-9-_.]) or an integer >= 1.
common::StatusOr<RouteConf> decode_route(const Json& obj);
common::StatusOr<ServiceConf> decode_service(const Json& obj);
common::StatusOr<UpstreamConf> decode_upstream(const Json& obj);

// True when `id` is a valid APISIX id string (1-64 of [a-zA-Z0-9-_.]).
bool valid_id(const std::string& id);

}  // namespace sluice::config
