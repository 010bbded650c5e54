#pragma once
// limit-count's `redis` and `redis-cluster` policies: one script call per request on the
// worker's own pipelined connection, the request suspended meanwhile.

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "plugin/plugin.h"
#include "plugins/limit_count/config.h"
#include "redis/client.h"

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

// Runs `script` on the worker's connection to `t` (made on first use; shared by every limit
// plugin naming the same server). Only conf's policy and redis fields are read.
void redis_eval(const Conf& conf, const RedisTarget& t, plugin::Context& ctx,
                const redis::Script& script, std::span<const std::string_view> keys,
                std::span<const std::string_view> args, redis::Callback cb);
// Sends one command, for its effect only (limit-conn's release).
void redis_command(const Conf& conf, const RedisTarget& t, plugin::Context& ctx,
                   std::span<const std::string_view> args);
// An integer reply, or a string holding one.
bool reply_int(const redis::Reply& r, int64_t* out);

// Counts the request in Redis; returns kPending (or kReply / kContinue on an immediate
// failure, per allow_degradation).
plugin::Action redis_incoming(const LimitCount& self, plugin::Context& ctx, std::string_view key);

}  // namespace sluice::plugins::limit_count
