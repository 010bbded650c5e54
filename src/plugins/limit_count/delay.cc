#include "plugins/limit_count/delay.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <vector>

#include "io/event_loop.h"
#include "io/timer.h"

namespace sluice::plugins::limit_count {

namespace {

// The delayed requests of one worker, soonest first, behind one timer. The timer queue keeps
// one list per distinct duration, so the timer is armed only with powers of two (at most 11
// of them, up to 1024 ms) and re-armed for the rest when it fires early.
// Thread: worker
class DelayQueue final : public plugin::WorkerObject {
 public:
  explicit DelayQueue(plugin::WorkerLocal& local) : local_(local) {}

  void add(uint64_t token, uint64_t delay_ms) {
    uint64_t deadline = local_.loop->now_ms() + delay_ms;
    heap_.push_back({deadline, token});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    if (!timer_.armed() || deadline < fires_at_) {
      arm();
    }
  }

 private:
  struct Entry {
    uint64_t deadline;
    uint64_t token;
    bool operator>(const Entry& o) const { return deadline > o.deadline; }
  };

  void arm() {
    uint64_t now = local_.loop->now_ms();
    uint64_t left = heap_.front().deadline > now ? heap_.front().deadline - now : 1;
    uint64_t step = std::bit_floor(std::min<uint64_t>(left, 1024));
    fires_at_ = now + step;
    local_.loop->arm(timer_, step);
  }

  static void on_timer(void* arg) {
    auto* self = static_cast<DelayQueue*>(arg);
    uint64_t now = self->local_.loop->now_ms();
    std::vector<Entry>& h = self->heap_;
    while (!h.empty() && h.front().deadline <= now) {
      std::pop_heap(h.begin(), h.end(), std::greater<>());
      uint64_t token = h.back().token;
      h.pop_back();
      // May run the rest of the chain, which may delay again (add() above).
      self->local_.host->resume(token, plugin::Action::kContinue);
    }
    if (!h.empty() && !self->timer_.armed()) {
      self->arm();
    }
  }

  plugin::WorkerLocal& local_;
  std::vector<Entry> heap_;
  uint64_t fires_at_ = 0;
  io::Timer timer_{on_timer, this};
};

}  // namespace

void resume_later(plugin::WorkerLocal& w, uint64_t token, uint64_t delay_ms) {
  auto& q = w.object<DelayQueue>("limit/delays", [&] { return std::make_unique<DelayQueue>(w); });
  q.add(token, std::max<uint64_t>(delay_ms, 1));
}

plugin::Action delay_request(plugin::Context& ctx, uint64_t delay_ms) {
  resume_later(*ctx.worker, ctx.worker->host->suspend(ctx), delay_ms);
  return plugin::Action::kPending;
}

}  // namespace sluice::plugins::limit_count
