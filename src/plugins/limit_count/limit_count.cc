#include "plugins/limit_count/limit_count.h"

#include <charconv>

#include "common/strings.h"
#include "io/event_loop.h"
#include "plugins/limit_count/word_table.h"

namespace sluice::plugins::limit_count {

using plugin::Action;
using plugin::Context;

namespace {

// `v` in decimal, written into `buf` (24 bytes).
std::string_view decimal(uint64_t v, char* buf) {
  auto r = std::to_chars(buf, buf + 24, v);
  return {buf, static_cast<size_t>(r.ptr - buf)};
}

// FNV-1a: stable across processes and architectures, so two nodes sharing a Redis name the
// same conf the same way.
common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  std::shared_ptr<CounterTable> table;
  if (conf->policy == Policy::kLocal) {
    const plugin::Json& attr = env.shared.attr_of("limit-count");
    size_t slots = attr.value("local_keys", size_t{1} << 20);
    table = env.shared.get<CounterTable>("limit-count/local",
                                         [&] { return std::make_shared<CounterTable>(slots); });
  }
  const bool per_route = conf->group.empty() && env.owner.starts_with("consumer/");
  // APISIX keys a group's counters by the group alone (`group:key`): every route of the group
  // shares them, and check_group made sure they share one conf.
  std::string scope;
  if (conf->group.empty()) {
    scope = conf_scope(env.owner, json);
  } else {
    scope = "group/" + conf->group;
  }
  auto lc =
      std::make_shared<LimitCount>(std::move(conf).value(), std::move(scope), std::move(table));
  lc->set_per_route(per_route);
  return std::shared_ptr<const plugin::Plugin>(std::move(lc));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"limit-count", 1002, false, check, make, kSchema};
  return kInfo;
}

LimitCount::LimitCount(Conf conf, std::string scope, std::shared_ptr<CounterTable> table)
    : conf_(std::move(conf)),
      scope_(std::move(scope)),
      key_(conf_.key_type, conf_.key),
      table_(std::move(table)) {
  scope_hash_ = stable_hash(scope_);
  limit_value_ = std::to_string(conf_.count);
  if (conf_.has_rejected_msg) {
    rejected_body_ = plugin::Json{{"error_msg", conf_.rejected_msg}}.dump() + "\n";
  }
  if (conf_.policy != Policy::kLocal) {
    redis_ = resolve_target(conf_);
    redis_prefix_ = "plugin-limit-count:" + scope_ + ":";
  }
}

Action LimitCount::access(Context& ctx) const {
  std::string_view k = key_.build(ctx, ctx.scratch, per_route_);
  if (conf_.policy != Policy::kLocal) {
    return redis_incoming(*this, ctx, k);
  }
  uint64_t now = ctx.worker->loop->now_ms();
  // The scope is folded into scope_hash_ once, at build: only the key is hashed per request.
  CounterTable::Result r =
      table_->incoming(key_hash({}, scope_hash_, k), conf_.count, conf_.time_window * 1000, now);
  return verdict(ctx, r.allowed, r.remaining, r.reset_s);
}

Action LimitCount::verdict(Context& ctx, bool allowed, uint64_t remaining, uint64_t reset_s) const {
  if (conf_.show_limit_quota_header) {
    plugin::HeaderEdits& h = ctx.resp.headers;
    char num[24];
    h.add("X-RateLimit-Limit", limit_value_);
    h.add("X-RateLimit-Remaining", decimal(allowed ? remaining : 0, num));
    h.add("X-RateLimit-Reset", decimal(reset_s, num));
  }
  if (allowed) {
    return Action::kContinue;
  }
  ctx.reply_status = conf_.rejected_code;
  ctx.reply_body = rejected_body_;
  return Action::kReply;
}

Action LimitCount::failed(Context& ctx) const {
  if (conf_.allow_degradation) {
    return Action::kContinue;
  }
  ctx.reply_status = 500;
  ctx.reply_body = "{\"error_msg\":\"failed to limit count\"}\n";
  return Action::kReply;
}

std::string_view LimitCount::redis_key(Context& ctx, std::string_view key) const {
  if (!key.empty() && key.data() == ctx.scratch.data()) {
    ctx.scratch.insert(0, redis_prefix_);
  } else {
    ctx.scratch.assign(redis_prefix_).append(key);
  }
  return ctx.scratch;
}

}  // namespace sluice::plugins::limit_count
