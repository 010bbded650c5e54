#pragma once
// limit-count's `redis` and `redis-cluster` policies: one script call per request on the
// worker's own pipelined connection, the request suspended meanwhile.

#include <string>
#include <string_view>

#include "common/status.h"
#include "plugin/plugin.h"
#include "plugins/limit_count/config.h"

namespace sluice::plugins::limit_count {

class LimitCount;

// The server(s) of a redis policy, resolved on the control thread so that a worker never
// waits on DNS.
// Thread: any (immutable)
struct RedisTarget {
  std::string object;  // the worker-local client's name: same target, same connection
  std::string error;   // set when a name did not resolve: every request fails with it
  std::string ip;      // policy redis: the address to connect to
  std::vector<std::string> cluster_nodes;  // policy redis-cluster: "ip:port" seeds
};

RedisTarget resolve_target(const Conf& conf);

// Counts the request in Redis; returns kPending (or kReply / kContinue on an immediate
// failure, per allow_degradation).
plugin::Action redis_incoming(const LimitCount& self, plugin::Context& ctx, std::string_view key);

}  // namespace sluice::plugins::limit_count
