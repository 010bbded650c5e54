#include "bench/wait.h"

#include <sys/prctl.h>

#include <cerrno>

#include "bench/clock.h"

namespace sluice::bench {

int wait_until(int epfd, epoll_event* events, int max_events, uint64_t deadline_ns) {
  if (deadline_ns == kNoDeadline) {
    return epoll_pwait2(epfd, events, max_events, nullptr, nullptr);
  }
  uint64_t now = now_ns();
  uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
  timespec ts;
  ts.tv_sec = static_cast<time_t>(left / kNsPerSec);
  ts.tv_nsec = static_cast<long>(left % kNsPerSec);
  return epoll_pwait2(epfd, events, max_events, &ts, nullptr);
}

void set_precise_timer_slack() { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

}  // namespace sluice::bench
