#include "bench/wait.h"

#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "bench/clock.h"

namespace sluice::bench {
namespace {

// epoll_pwait2 needs Linux 5.11; qemu-user and older kernels answer ENOSYS. Learnt once.
std::atomic<bool> g_no_pwait2{false};

// The fallback: epoll_wait to the last whole millisecond before the deadline, then polls
// (timeout 0) through the rest, so deadlines stay exact at the cost of a busy sub-millisecond.
int wait_until_ms(int epfd, epoll_event* events, int max_events, uint64_t deadline_ns) {
  while (true) {
    uint64_t now = now_ns();
    uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    int timeout_ms =
        left >= 1'000'000 ? static_cast<int>(std::min<uint64_t>(left / 1'000'000, 1'000'000)) : 0;
    int n = epoll_wait(epfd, events, max_events, timeout_ms);
    if (n != 0 || left == 0) {
      return n;
    }
  }
}

}  // namespace

int wait_until(int epfd, epoll_event* events, int max_events, uint64_t deadline_ns) {
  if (!g_no_pwait2.load(std::memory_order_relaxed)) {
    timespec ts;
    timespec* tsp = nullptr;
    if (deadline_ns != kNoDeadline) {
      uint64_t now = now_ns();
      uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
      ts.tv_sec = static_cast<time_t>(left / kNsPerSec);
      ts.tv_nsec = static_cast<long>(left % kNsPerSec);
      tsp = &ts;
    }
    int n = epoll_pwait2(epfd, events, max_events, tsp, nullptr);
    if (n >= 0 || errno != ENOSYS) {
      return n;
    }
    g_no_pwait2.store(true, std::memory_order_relaxed);
  }
  if (deadline_ns == kNoDeadline) {
    return epoll_wait(epfd, events, max_events, -1);
  }
  return wait_until_ms(epfd, events, max_events, deadline_ns);
}

void set_precise_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

}  // namespace sluice::bench
