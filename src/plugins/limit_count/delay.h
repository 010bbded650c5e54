#pragma once
// Delaying a request without blocking its worker (limit-req's and limit-conn's throttling, in
// place of APISIX's ngx.sleep): the request is suspended and resumed from a timer on the
// worker's loop once the delay is over.

#include <cstdint>

#include "plugin/plugin.h"

namespace sluice::plugins::limit_count {

// Suspends ctx's request and resumes it with Action::kContinue after `delay_ms` (>= 1) on the
// worker's loop; returns Action::kPending for the hook to return. A request whose client goes
// meanwhile is simply not resumed.
// Thread: worker
plugin::Action delay_request(plugin::Context& ctx, uint64_t delay_ms);

// Resumes the request already suspended under `token` with Action::kContinue after
// `delay_ms` (a Redis answer that says "wait"). Never calls resume() from inside this call.
// Thread: worker
void resume_later(plugin::WorkerLocal& w, uint64_t token, uint64_t delay_ms);

}  // namespace sluice::plugins::limit_count
