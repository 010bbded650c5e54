#include "plugins/fault_injection/fault_injection.h"

#include <cmath>
#include <memory>
#include <vector>

#include "io/event_loop.h"
#include "io/timer.h"

namespace sluice::plugins::fault_injection {

using plugin::Action;
using plugin::Context;

namespace {

// One delayed request: the timer that resumes it and what it resumes with.
// Thread: worker
struct Pending {
  explicit Pending(struct DelayPool* p) : timer(&Pending::fire, this), pool(p) {}
  static void fire(void* arg);
  io::Timer timer;
  uint64_t token = 0;
  plugin::Host* host = nullptr;
  Action then = Action::kContinue;
  struct DelayPool* pool;
};

// The worker's delayed requests; their timers are reused, so steady state allocates nothing.
// Thread: worker
struct DelayPool final : plugin::WorkerObject {
  Pending* take() {
    if (free.empty()) {
      all.push_back(std::make_unique<Pending>(this));
      return all.back().get();
    }
    Pending* p = free.back();
    free.pop_back();
    return p;
  }
  std::vector<std::unique_ptr<Pending>> all;
  std::vector<Pending*> free;
};

void Pending::fire(void* arg) {
  auto* p = static_cast<Pending*>(arg);
  // A request whose client left while it waited is gone: nothing to resume.
  if (p->host->waiting(p->token) != nullptr) {
    p->host->resume(p->token, p->then);
  }
  p->pool->free.push_back(p);
}

// xorshift64*: a cheap per-thread generator; sampling needs no more.
uint64_t next_random() {
  thread_local uint64_t s = 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(&s);
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545f4914f6cdd1dULL;
}

// APISIX's vars_match: true when any expression matches; an empty list matches nothing.
bool vars_match(const std::vector<router::Expr>& vars, const Context& ctx) {
  for (const router::Expr& e : vars) {
    if (e.eval(ctx.match)) {
      return true;
    }
  }
  return false;
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<FaultInjection>(std::move(conf).value()));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"fault-injection", 11000, false, check, make, kSchema};
  return kInfo;
}

bool FaultInjection::sample_hit(int percentage) {
  if (percentage < 0) {
    return true;
  }
  return static_cast<int>(next_random() % 100) + 1 <= percentage;
}

void FaultInjection::abort_reply(Context& ctx) const {
  const Abort& a = conf_.abort;
  ctx.reply_status = a.http_status;
  ctx.reply_body.clear();
  if (a.has_body) {
    a.body.render(ctx, ctx.match, &ctx.reply_body);
  }
  std::string& value = ctx.scratch;
  for (const auto& [name, tmpl] : a.headers) {
    tmpl.render(ctx, ctx.match, &value);
    ctx.resp.headers.set(name, value);
  }
}

Action FaultInjection::rewrite(Context& ctx) const {
  // As APISIX: both vars are read first, the delay is sampled and taken, then the abort.
  const bool abort_vars = !conf_.abort.has_vars || vars_match(conf_.abort.vars, ctx);
  const bool delay_vars = !conf_.delay.has_vars || vars_match(conf_.delay.vars, ctx);
  const bool delay = conf_.delay.on && sample_hit(conf_.delay.percentage) && delay_vars;
  const bool abort = conf_.abort.on && sample_hit(conf_.abort.percentage) && abort_vars;
  if (abort) {
    abort_reply(ctx);
  }
  const Action then = abort ? Action::kReply : Action::kContinue;
  // Whole milliseconds, at least one for any positive duration (the loop's clock is in ms).
  const double ms = std::ceil(conf_.delay.duration * 1000.0);
  if (!delay || ms <= 0 || ctx.worker == nullptr || ctx.worker->host == nullptr) {
    return then;
  }
  auto& pool = ctx.worker->object<DelayPool>("fault-injection/delays",
                                             [] { return std::make_unique<DelayPool>(); });
  Pending* p = pool.take();
  p->host = ctx.worker->host;
  p->then = then;
  p->token = p->host->suspend(ctx);
  ctx.worker->loop->arm(p->timer, static_cast<uint64_t>(ms));
  return Action::kPending;
}

}  // namespace sluice::plugins::fault_injection
