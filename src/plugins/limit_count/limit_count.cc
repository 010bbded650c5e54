#include "plugins/limit_count/limit_count.h"

#include <charconv>

#include "common/strings.h"
#include "io/event_loop.h"

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
uint64_t stable_hash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ull;
  }
  return h;
}

// "$a-$b ${c}" -> [var a, "-", var b, " ", var c]; text without `$` stays text.
std::vector<std::string> split_combination(std::string_view k) {
  std::vector<std::string> out;  // even: text, odd: var name
  std::string text;
  for (size_t i = 0; i < k.size();) {
    if (k[i] != '$') {
      text.push_back(k[i++]);
      continue;
    }
    size_t start = i + 1, end = start;
    bool braced = start < k.size() && k[start] == '{';
    if (braced) {
      end = k.find('}', start);
      if (end == std::string_view::npos) {
        text.append(k.substr(i));
        break;
      }
      out.push_back(std::move(text));
      text.clear();
      out.emplace_back(k.substr(start + 1, end - start - 1));
      i = end + 1;
      continue;
    }
    while (end < k.size() && (std::isalnum(static_cast<unsigned char>(k[end])) || k[end] == '_')) {
      ++end;
    }
    if (end == start) {
      text.push_back(k[i++]);
      continue;
    }
    out.push_back(std::move(text));
    text.clear();
    out.emplace_back(k.substr(start, end - start));
    i = end;
  }
  out.push_back(std::move(text));
  return out;
}

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
  std::string scope = conf->group.empty() ? std::string(env.owner) : "group/" + conf->group;
  scope += ':';
  common::append_uint(scope, stable_hash(json.dump()));
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
    : conf_(std::move(conf)), scope_(std::move(scope)), table_(std::move(table)) {
  scope_hash_ = stable_hash(scope_);
  if (conf_.key_type == KeyType::kVar) {
    parts_.push_back({conf_.key, router::Var::parse(conf_.key), true});
  } else if (conf_.key_type == KeyType::kVarCombination) {
    std::vector<std::string> pieces = split_combination(conf_.key);
    for (size_t i = 0; i < pieces.size(); ++i) {
      bool is_var = i % 2 == 1;
      if (!is_var && pieces[i].empty()) {
        continue;
      }
      router::Var v = is_var ? router::Var::parse(pieces[i]) : router::Var();
      parts_.push_back({std::move(pieces[i]), std::move(v), is_var});
    }
  }
  limit_value_ = std::to_string(conf_.count);
  if (conf_.has_rejected_msg) {
    rejected_body_ = plugin::Json{{"error_msg", conf_.rejected_msg}}.dump() + "\n";
  }
  if (conf_.policy != Policy::kLocal) {
    redis_ = resolve_target(conf_);
    redis_prefix_ = "plugin-limit-count:" + scope_ + ":";
  }
}

std::string_view LimitCount::var_value(const Part& p, Context& ctx, router::VarScratch* s) const {
  // The variables only the plugin layer knows; the rest read the request as `vars` does.
  if (p.text == "consumer_name") {
    return ctx.consumer;
  }
  if (p.text == "consumer_group_id") {
    return ctx.consumer_group_id;
  }
  if (p.text == "route_id") {
    return ctx.route_id;
  }
  if (p.text == "service_id") {
    return ctx.service_id;
  }
  std::string_view v;
  return p.var.get(ctx.match, s, &v) ? v : std::string_view();
}

std::string_view LimitCount::key(Context& ctx) const {
  if (conf_.key_type == KeyType::kConstant && !per_route_) {
    return conf_.key;
  }
  router::VarScratch s;
  std::string& out = ctx.scratch;
  out.clear();
  if (per_route_) {
    // A consumer's (or its group's) conf counts per route, as APISIX's conf_type
    // "route&consumer" keys it.
    out.append(ctx.route_id);
    out.push_back('&');
    if (conf_.key_type == KeyType::kConstant) {
      out.append(conf_.key);
      return out;
    }
  }
  const size_t start = out.size();
  bool any = false;
  for (const Part& p : parts_) {
    if (!p.is_var) {
      out.append(p.text);
      continue;
    }
    std::string_view v = var_value(p, ctx, &s);
    any = any || !v.empty();
    out.append(v);
  }
  if (!any) {
    // APISIX: an empty key falls back to the client address.
    out.resize(start);
    out.append(ctx.match.remote_addr);
  }
  return out;
}

Action LimitCount::access(Context& ctx) const {
  std::string_view k = key(ctx);
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
