#pragma once
// Epoll waits with nanosecond deadlines, so open-loop pacing and the synthetic server's
// service times are not rounded to milliseconds.

#include <sys/epoll.h>

#include <cstdint>

namespace sluice::bench {

inline constexpr uint64_t kNoDeadline = UINT64_MAX;

// epoll_pwait2 until `deadline_ns` (CLOCK_MONOTONIC; kNoDeadline waits for events only).
// Where epoll_pwait2 is missing (Linux < 5.11, qemu-user), epoll_wait to the last whole
// millisecond and then a busy poll to the deadline.
// Returns the number of events, 0 on timeout, or -1 with errno (EINTR included).
int wait_until(int epfd, epoll_event* events, int max_events, uint64_t deadline_ns);

// Asks the kernel to wake this thread on time (default timer slack is 50 us).
void set_precise_timer_slack();

}  // namespace sluice::bench
