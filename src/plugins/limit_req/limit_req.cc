#include "plugins/limit_req/limit_req.h"

#include <time.h>

#include <atomic>
#include <charconv>
#include <cmath>

#include "common/log.h"
#include "common/strings.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/delay.h"
#include "redis/client.h"

namespace sluice::plugins::limit_req {

using plugin::Action;
using plugin::Context;

namespace {

uint64_t clamp_units(double v) {
  return v >= 9e18 ? uint64_t{9000000000000000000ull} : static_cast<uint64_t>(std::llround(v));
}

Bucket bucket(const Conf& c, double units_per_s) {
  return {std::max<uint64_t>(clamp_units(units_per_s / c.rate), 1),
          clamp_units(c.burst * units_per_s / c.rate)};
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  std::shared_ptr<limit_count::WordTable> table;
  if (conf->redis.policy == Policy::kLocal) {
    table = limit_count::local_table(env.shared, "limit-req");
  }
  // A conf change starts new buckets, as APISIX keys them by the plugin's conf version.
  const bool per_route = env.owner.starts_with("consumer/");
  std::string scope = limit_count::conf_scope(env.owner, json);
  auto lr = std::make_shared<LimitReq>(std::move(conf).value(), std::move(scope), std::move(table));
  lr->set_per_route(per_route);
  return std::shared_ptr<const plugin::Plugin>(std::move(lr));
}

uint64_t realtime_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// KEYS[1] the bucket; ARGV: now (us, wall clock), 1/rate (us), burst/rate (us). The bucket is
// the time it drains empty (see Bucket). Returns the wait in us, or -1 when rejected.
const redis::Script& script() {
  static const redis::Script kScript(R"LUA(
local t = tonumber(redis.call('get', KEYS[1]) or 0)
local now = tonumber(ARGV[1])
local nt = now
if t > 0 and t + tonumber(ARGV[2]) > now then
  nt = t + tonumber(ARGV[2])
end
if nt - now > tonumber(ARGV[3]) then
  return -1
end
redis.call('set', KEYS[1], string.format('%.0f', nt), 'PX', math.floor((nt - now) / 1000) + 1000)
return nt - now
)LUA");
  return kScript;
}

void on_reply(void* local_ptr, uint64_t token, const redis::Reply* reply, std::string_view error) {
  auto* local = static_cast<plugin::WorkerLocal*>(local_ptr);
  Context* ctx = local->host->waiting(token);
  if (ctx == nullptr) {
    return;  // the request ended while Redis answered
  }
  const auto* self = static_cast<const LimitReq*>(ctx->pending);
  int64_t wait_us = 0;
  Action a;
  if (reply != nullptr && limit_count::reply_int(*reply, &wait_us)) {
    a = self->verdict(*ctx, wait_us < 0 ? -1 : wait_us * 1000);
    if (a == Action::kPending) {
      // verdict() wants a delay: the request is already suspended under `token`.
      limit_count::resume_later(*local, token, static_cast<uint64_t>(wait_us + 500) / 1000);
      return;
    }
  } else {
    SLUICE_LOG(kError, "limit-req: failed to limit req: {}",
               reply != nullptr ? redis::describe(*reply) : std::string(error));
    a = self->failed(*ctx);
  }
  local->host->resume(token, a);
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"limit-req", 1001, false, check, make, kSchema};
  return kInfo;
}

int64_t Bucket::incoming(uint64_t* word, uint64_t now) const {
  std::atomic_ref<uint64_t> w(*word);
  uint64_t t = w.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t next = t == 0 || t + interval <= now ? now : t + interval;
    if (next - now > limit) {
      return -1;
    }
    if (w.compare_exchange_weak(t, next, std::memory_order_relaxed)) {
      return static_cast<int64_t>(next - now);
    }
  }
}

LimitReq::LimitReq(Conf conf, std::string scope, std::shared_ptr<limit_count::WordTable> table)
    : conf_(std::move(conf)),
      scope_(std::move(scope)),
      key_(conf_.key_type, conf_.key),
      table_(std::move(table)) {
  scope_hash_ = limit_count::stable_hash(scope_);
  local_ = bucket(conf_, 1e9);
  remote_ = bucket(conf_, 1e6);
  if (conf_.has_rejected_msg) {
    rejected_body_ = plugin::Json{{"error_msg", conf_.rejected_msg}}.dump() + "\n";
  }
  if (conf_.redis.policy != Policy::kLocal) {
    redis_ = limit_count::resolve_target(conf_.redis);
    redis_prefix_ = "limit_req:" + scope_ + ":";
  }
}

Action LimitReq::access(Context& ctx) const {
  std::string_view k = key_.build(ctx, ctx.scratch, per_route_);
  if (conf_.redis.policy != Policy::kLocal) {
    return redis_incoming(ctx, k);
  }
  uint64_t* word = table_->word(limit_count::key_hash({}, scope_hash_, k));
  int64_t wait = local_.incoming(word, plugin::monotonic_ns());
  Action a = verdict(ctx, wait);
  if (a == Action::kPending) {
    return limit_count::delay_request(ctx, static_cast<uint64_t>(wait + 500000) / 1000000);
  }
  return a;
}

Action LimitReq::verdict(Context& ctx, int64_t wait_ns) const {
  if (wait_ns < 0) {
    ctx.reply_status = conf_.rejected_code;
    ctx.reply_body = rejected_body_;
    return Action::kReply;
  }
  // APISIX sleeps only for a delay of 1 ms or more.
  if (conf_.nodelay || wait_ns < 1000000) {
    return Action::kContinue;
  }
  return Action::kPending;
}

Action LimitReq::failed(Context& ctx) const {
  if (conf_.allow_degradation) {
    return Action::kContinue;
  }
  ctx.reply_status = 500;
  ctx.reply_body.clear();
  return Action::kReply;
}

Action LimitReq::redis_incoming(Context& ctx, std::string_view key) const {
  if (!redis_.error.empty()) {
    SLUICE_LOG(kError, "limit-req: failed to limit req: {}", redis_.error);
    return failed(ctx);
  }
  if (!key.empty() && key.data() == ctx.scratch.data()) {
    ctx.scratch.insert(0, redis_prefix_);
  } else {
    ctx.scratch.assign(redis_prefix_).append(key);
  }
  char now[24], interval[24], limit[24];
  auto n = std::to_chars(now, now + sizeof(now), realtime_us());
  auto i = std::to_chars(interval, interval + sizeof(interval), remote_.interval);
  auto l = std::to_chars(limit, limit + sizeof(limit), remote_.limit);
  std::string_view keys[1] = {ctx.scratch};
  std::string_view args[3] = {std::string_view(now, n.ptr - now),
                              std::string_view(interval, i.ptr - interval),
                              std::string_view(limit, l.ptr - limit)};
  limit_count::redis_eval(conf_.redis, redis_, ctx, script(), keys, args,
                          redis::Callback{on_reply, ctx.worker, ctx.worker->host->suspend(ctx)});
  return Action::kPending;
}

}  // namespace sluice::plugins::limit_req
