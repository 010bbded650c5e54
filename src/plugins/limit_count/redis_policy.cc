#include "plugins/limit_count/redis_policy.h"

#include <charconv>
#include <cstdlib>

#include "common/log.h"
#include "plugins/limit_count/limit_count.h"
#include "redis/client.h"
#include "redis/cluster.h"

namespace sluice::plugins::limit_count {

using plugin::Action;
using plugin::Context;

namespace {

// KEYS[1] the counter; ARGV: limit, window in ms, cost. The window starts at the key's first
// request (the key's expiry); returns {remaining after this request, ms to the window's end}.
// A negative remaining means rejected.
const redis::Script& script() {
  static const redis::Script kScript(R"LUA(
local ttl = redis.call('pttl', KEYS[1])
if ttl < 0 then
  local remaining = tonumber(ARGV[1]) - tonumber(ARGV[3])
  redis.call('set', KEYS[1], remaining, 'PX', ARGV[2])
  return {remaining, tonumber(ARGV[2])}
end
return {redis.call('decrby', KEYS[1], ARGV[3]), ttl}
)LUA");
  return kScript;
}

// One worker's connection to one Redis target.
// Thread: worker
struct RedisObject final : plugin::WorkerObject {
  std::unique_ptr<redis::Client> single;
  std::unique_ptr<redis::ClusterClient> cluster;
};

RedisObject& object_for(const Conf& c, const RedisTarget& t, Context& ctx) {
  return ctx.worker->object<RedisObject>(t.object, [&] {
    auto o = std::make_unique<RedisObject>();
    if (c.policy == Policy::kRedis) {
      redis::ClientOptions opt;
      opt.host = t.ip;
      opt.port = static_cast<uint16_t>(c.redis_port);
      if (!c.redis_username.empty()) {
        opt.username = c.redis_username;
      }
      if (!c.redis_password.empty()) {
        opt.password = c.redis_password;
      }
      opt.database = static_cast<uint32_t>(c.redis_database);
      opt.timeout_ms = static_cast<uint32_t>(c.redis_timeout);
      opt.connect_timeout_ms = opt.timeout_ms;
      o->single = std::make_unique<redis::Client>(*ctx.worker->loop, opt);
    } else {
      redis::ClusterOptions opt;
      opt.seeds = t.cluster_nodes;
      if (!c.redis_username.empty()) {
        opt.username = c.redis_username;
      }
      if (!c.redis_password.empty()) {
        opt.password = c.redis_password;
      }
      opt.timeout_ms = static_cast<uint32_t>(c.redis_timeout);
      opt.connect_timeout_ms = opt.timeout_ms;
      o->cluster = std::make_unique<redis::ClusterClient>(*ctx.worker->loop, opt);
    }
    return o;
  });
}

}  // namespace

bool reply_int(const redis::Reply& r, int64_t* out) {
  if (r.type == redis::Reply::Type::kInteger) {
    *out = r.integer;
    return true;
  }
  if (r.is_string()) {
    char* end = nullptr;
    *out = std::strtoll(r.str.c_str(), &end, 10);
    return end != r.str.c_str() && *end == '\0';
  }
  return false;
}

namespace {

void on_reply(void* local_ptr, uint64_t token, const redis::Reply* reply, std::string_view error) {
  auto* local = static_cast<plugin::WorkerLocal*>(local_ptr);
  Context* ctx = local->host->waiting(token);
  if (ctx == nullptr) {
    return;  // the request ended while Redis answered
  }
  const auto* self = static_cast<const LimitCount*>(ctx->pending);
  int64_t remaining = 0, ttl_ms = 0;
  Action a;
  if (reply != nullptr && reply->type == redis::Reply::Type::kArray &&
      reply->elements.size() == 2 && reply_int(reply->elements[0], &remaining) &&
      reply_int(reply->elements[1], &ttl_ms)) {
    uint64_t reset = ttl_ms > 0 ? static_cast<uint64_t>((ttl_ms + 999) / 1000) : 0;
    a = self->verdict(*ctx, remaining >= 0, remaining >= 0 ? static_cast<uint64_t>(remaining) : 0,
                      reset);
  } else {
    SLUICE_LOG(kError, "limit-count: failed to limit count: {}",
               reply != nullptr ? redis::describe(*reply) : std::string(error));
    a = self->failed(*ctx);
  }
  local->host->resume(token, a);
}

}  // namespace

RedisTarget resolve_target(const Conf& c) {
  RedisTarget t;
  if (c.policy == Policy::kRedis) {
    auto addr = redis::resolve_address(c.redis_host, static_cast<uint16_t>(c.redis_port));
    if (!addr.is_ok()) {
      t.error = "cannot resolve redis_host " + c.redis_host + ": " + addr.status().message();
    } else {
      t.ip = addr->ip_text();
    }
  } else {
    for (const std::string& n : c.redis_cluster_nodes) {
      std::string host;
      uint16_t port = 0;
      if (!redis::split_host_port(n, &host, &port)) {
        t.error = "redis_cluster_nodes: expected host:port, got " + n;
        break;
      }
      auto addr = redis::resolve_address(host, port);
      if (!addr.is_ok()) {
        t.error = "cannot resolve " + n + ": " + addr.status().message();
        break;
      }
      std::string ip = addr->ip_text();
      t.cluster_nodes.push_back(ip.find(':') != std::string::npos
                                    ? "[" + ip + "]:" + std::to_string(port)
                                    : ip + ":" + std::to_string(port));
    }
  }
  // Same servers, database and credentials: one connection per worker, shared by every conf.
  t.object = "limit-count/redis " + t.ip + ":" + std::to_string(c.redis_port) + "/" +
             std::to_string(c.redis_database) + "/" + c.redis_username + "/" + c.redis_password +
             "/" + std::to_string(c.redis_timeout);
  for (const std::string& n : t.cluster_nodes) {
    t.object += " " + n;
  }
  return t;
}

Action redis_incoming(const LimitCount& self, Context& ctx, std::string_view key) {
  const RedisTarget& t = self.redis_target();
  if (!t.error.empty()) {
    SLUICE_LOG(kError, "limit-count: failed to limit count: {}", t.error);
    return self.failed(ctx);
  }
  const Conf& c = self.conf();
  char limit[24], window[24];
  auto l = std::to_chars(limit, limit + sizeof(limit), c.count);
  auto w = std::to_chars(window, window + sizeof(window), c.time_window * 1000);
  std::string_view keys[1] = {self.redis_key(ctx, key)};
  std::string_view args[3] = {std::string_view(limit, l.ptr - limit),
                              std::string_view(window, w.ptr - window), "1"};
  redis_eval(c, t, ctx, script(), keys, args,
             redis::Callback{on_reply, ctx.worker, ctx.worker->host->suspend(ctx)});
  return Action::kPending;
}

void redis_eval(const Conf& conf, const RedisTarget& t, Context& ctx, const redis::Script& script,
                std::span<const std::string_view> keys, std::span<const std::string_view> args,
                redis::Callback cb) {
  RedisObject& o = object_for(conf, t, ctx);
  if (o.single) {
    o.single->eval(script, keys, args, cb);
  } else {
    o.cluster->eval(script, keys, args, cb);
  }
}

void redis_command(const Conf& conf, const RedisTarget& t, Context& ctx,
                   std::span<const std::string_view> args) {
  RedisObject& o = object_for(conf, t, ctx);
  redis::Callback ignore{[](void*, uint64_t, const redis::Reply*, std::string_view) {}, nullptr, 0};
  if (o.single) {
    o.single->command(args, ignore);
  } else {
    o.cluster->command(args, ignore);
  }
}

}  // namespace sluice::plugins::limit_count
