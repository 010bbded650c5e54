#include "plugins/response_rewrite/held_bodies.h"

#include <memory>

namespace sluice::plugins::response_rewrite {

namespace {
const char kTag = 0;  // names the worker's slot
}  // namespace

std::string& HeldBodies::at(const plugin::Context& ctx) { return held_[Key{&ctx, ctx.entry}]; }

void HeldBodies::release(const plugin::Context& ctx) { held_.erase(Key{&ctx, ctx.entry}); }

HeldBodies* HeldBodies::of(const plugin::WorkerLocal* local) {
  return local == nullptr ? nullptr : local->slot<HeldBodies>(&kTag);
}

void HeldBodies::worker_init(plugin::Shared&, plugin::WorkerLocal& local) {
  HeldBodies& h = local.object<HeldBodies>("response-rewrite/held-bodies",
                                           [] { return std::make_unique<HeldBodies>(); });
  local.set_slot(&kTag, &h);
}

}  // namespace sluice::plugins::response_rewrite
