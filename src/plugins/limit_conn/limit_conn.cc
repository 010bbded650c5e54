#include "plugins/limit_conn/limit_conn.h"

#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cmath>

#include "common/log.h"
#include "common/strings.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/delay.h"
#include "redis/client.h"

namespace sluice::plugins::limit_conn {

using plugin::Action;
using plugin::Context;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  std::shared_ptr<limit_count::WordTable> table;
  if (conf->redis.policy == Policy::kLocal) {
    table = limit_count::local_table(env.shared, "limit-conn");
  }
  // APISIX keys the count by the conf's version: a conf change starts from zero (requests in
  // flight release the counter they took).
  const bool per_route = env.owner.starts_with("consumer/");
  std::string scope = limit_count::conf_scope(env.owner, json);
  auto lc =
      std::make_shared<LimitConn>(std::move(conf).value(), std::move(scope), std::move(table));
  lc->set_per_route(per_route);
  return std::shared_ptr<const plugin::Plugin>(std::move(lc));
}

// KEYS[1] the key's set; ARGV: limit (conn + burst), ttl (s), now (s), member. Members score
// their expiry, so a gateway that dies holding some does not hold them for ever. Returns
// {1, count with this one} or {0, count}.
const redis::Script& script() {
  static const redis::Script kScript(R"LUA(
redis.call('zremrangebyscore', KEYS[1], 0, ARGV[3])
local n = redis.call('zcard', KEYS[1])
if n >= tonumber(ARGV[1]) then
  return {0, n}
end
redis.call('zadd', KEYS[1], tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
redis.call('expire', KEYS[1], ARGV[2])
return {1, n + 1}
)LUA");
  return kScript;
}

// What a redis-held request keeps until its log phase: the set and its member.
// Thread: worker
struct Held {
  std::string key;
  std::string member;
};

void on_reply(void* local_ptr, uint64_t token, const redis::Reply* reply, std::string_view error) {
  auto* local = static_cast<plugin::WorkerLocal*>(local_ptr);
  Context* ctx = local->host->waiting(token);
  if (ctx == nullptr) {
    return;  // gone: its log phase ran without a hold, so release the member now
  }
  const auto* self = static_cast<const LimitConn*>(ctx->pending);
  int64_t allowed = 0, n = 0;
  Action a = Action::kContinue;
  uint64_t held_a = 0, held_b = 0;
  bool parked = ctx->take_words(&held_a, &held_b);  // the Held the access hook parked
  std::unique_ptr<Held> held(reinterpret_cast<Held*>(held_a));
  if (parked && reply != nullptr && reply->type == redis::Reply::Type::kArray &&
      reply->elements.size() == 2 && limit_count::reply_int(reply->elements[0], &allowed) &&
      limit_count::reply_int(reply->elements[1], &n)) {
    if (allowed == 0) {
      a = self->rejected(*ctx);
    } else {
      uint64_t wait = self->delay_ms(static_cast<uint64_t>(n));
      ctx->keep_words(reinterpret_cast<uint64_t>(held.release()), wait * 1000000);
      if (wait > 0) {
        limit_count::resume_later(*local, token, wait);
        return;
      }
    }
  } else {
    SLUICE_LOG(kError, "limit-conn: failed to limit conn: {}",
               reply != nullptr ? redis::describe(*reply) : std::string(error));
    a = self->failed(*ctx);
  }
  local->host->resume(token, a);
}

uint64_t realtime_s() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec);
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"limit-conn", 1003, false, check, make, kSchema};
  return kInfo;
}

uint64_t enter(uint64_t* word, uint64_t max) {
  std::atomic_ref<uint64_t> w(*word);
  uint64_t c = w.load(std::memory_order_relaxed);
  do {
    if (c >= max) {
      return 0;
    }
  } while (!w.compare_exchange_weak(c, c + 1, std::memory_order_relaxed));
  return c + 1;
}

void leave(uint64_t* word) {
  std::atomic_ref<uint64_t>(*word).fetch_sub(1, std::memory_order_relaxed);
}

LimitConn::LimitConn(Conf conf, std::string scope, std::shared_ptr<limit_count::WordTable> table)
    : conf_(std::move(conf)),
      scope_(std::move(scope)),
      key_(conf_.key_type, conf_.key),
      table_(std::move(table)) {
  scope_hash_ = limit_count::stable_hash(scope_);
  unit_delay_ns_.store(static_cast<uint64_t>(std::llround(conf_.default_conn_delay * 1e9)));
  if (conf_.has_rejected_msg) {
    rejected_body_ = plugin::Json{{"error_msg", conf_.rejected_msg}}.dump() + "\n";
  }
  if (conf_.redis.policy != Policy::kLocal) {
    redis_ = limit_count::resolve_target(conf_.redis);
    redis_prefix_ = conf_.redis_prefix + ":" + scope_ + ":";
  }
}

uint64_t LimitConn::delay_ms(uint64_t n) const {
  if (n <= conf_.conn) {
    return 0;
  }
  uint64_t ns = unit_delay_ns() * ((n - 1) / conf_.conn);
  // APISIX sleeps only for a delay of 1 ms or more.
  return ns < 1000000 ? 0 : (ns + 500000) / 1000000;
}

Action LimitConn::rejected(Context& ctx) const {
  ctx.reply_status = conf_.rejected_code;
  ctx.reply_body = rejected_body_;
  return Action::kReply;
}

Action LimitConn::failed(Context& ctx) const {
  if (conf_.allow_degradation) {
    return Action::kContinue;
  }
  ctx.reply_status = 500;
  ctx.reply_body.clear();
  return Action::kReply;
}

Action LimitConn::access(Context& ctx) const {
  if (ctx.words_full()) {
    SLUICE_LOG(kError, "limit-conn: more than {} limit-conn instances on one request; not counted",
               plugin::Context::kEntryWords);
    return Action::kContinue;
  }
  std::string_view k = key_.build(ctx, ctx.scratch, per_route_);
  if (conf_.redis.policy != Policy::kLocal) {
    return redis_incoming(ctx, k);
  }
  uint64_t* word = table_->word(limit_count::key_hash({}, scope_hash_, k));
  uint64_t n = enter(word, conf_.conn + conf_.burst);
  if (n == 0) {
    return rejected(ctx);
  }
  uint64_t wait = delay_ms(n);
  ctx.keep_words(reinterpret_cast<uint64_t>(word), wait * 1000000);
  return wait > 0 ? limit_count::delay_request(ctx, wait) : Action::kContinue;
}

Action LimitConn::redis_incoming(Context& ctx, std::string_view key) const {
  if (!redis_.error.empty()) {
    SLUICE_LOG(kError, "limit-conn: failed to limit conn: {}", redis_.error);
    return failed(ctx);
  }
  // A member unique across gateways: process, worker, sequence.
  static std::atomic<uint64_t> seq{0};
  auto held = std::make_unique<Held>();
  held->key.assign(redis_prefix_).append(key);
  held->member = std::to_string(getpid()) + "-" + std::to_string(ctx.worker->worker_id) + "-" +
                 std::to_string(seq.fetch_add(1, std::memory_order_relaxed));
  char limit[24], ttl[24], now[24];
  auto l = std::to_chars(limit, limit + sizeof(limit), conf_.conn + conf_.burst);
  auto t = std::to_chars(ttl, ttl + sizeof(ttl), conf_.key_ttl);
  auto n = std::to_chars(now, now + sizeof(now), realtime_s());
  std::string_view keys[1] = {held->key};
  std::string_view args[4] = {std::string_view(limit, l.ptr - limit),
                              std::string_view(ttl, t.ptr - ttl),
                              std::string_view(now, n.ptr - now), held->member};
  limit_count::redis_eval(conf_.redis, redis_, ctx, script(), keys, args,
                          redis::Callback{on_reply, ctx.worker, ctx.worker->host->suspend(ctx)});
  // Parked for the answer; while it is pending, the log phase (client gone) releases it.
  ctx.keep_words(reinterpret_cast<uint64_t>(held.release()), 0);
  return Action::kPending;
}

void LimitConn::log(Context& ctx) const {
  uint64_t a = 0, b = 0;
  if (!ctx.take_words(&a, &b)) {
    return;  // not counted: rejected, answered before this plugin, or not run
  }
  if (!conf_.only_use_default_delay && ctx.start_ns != 0) {
    uint64_t now = plugin::monotonic_ns();
    uint64_t latency = 0;
    if (ctx.upstream_start_ns != 0) {
      uint64_t end = ctx.upstream_end_ns != 0 ? ctx.upstream_end_ns : now;
      latency = end > ctx.upstream_start_ns ? end - ctx.upstream_start_ns : 0;
    } else {
      uint64_t total = now - ctx.start_ns;
      latency = total > b ? total - b : 0;
    }
    unit_delay_ns_.store((latency + unit_delay_ns()) / 2, std::memory_order_relaxed);
  }
  if (conf_.redis.policy == Policy::kLocal) {
    leave(reinterpret_cast<uint64_t*>(a));
    return;
  }
  std::unique_ptr<Held> held(reinterpret_cast<Held*>(a));
  std::string_view args[3] = {"ZREM", held->key, held->member};
  limit_count::redis_command(conf_.redis, redis_, ctx, args);
}

}  // namespace sluice::plugins::limit_conn
