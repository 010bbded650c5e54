#pragma once
// One epoll loop per worker thread. Sockets are registered once, edge-triggered, for both
// directions; handlers track readiness themselves, so backpressure needs no epoll_ctl.

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/ring.h"
#include "io/timer.h"

namespace sluice::io {

// Something that owns a file descriptor registered with a loop.
// Thread: worker
class IoHandler {
 public:
  virtual ~IoHandler() = default;
  virtual void on_io(uint32_t events) = 0;
};

inline constexpr uint32_t kEdgeBoth = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;

// Thread: worker (post() is the one call allowed from any thread)
class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  bool add(int fd, IoHandler* h, uint32_t events = kEdgeBoth);
  void remove(int fd);
  // Destroys `h` after the current batch of events, so events already fetched for it in
  // this batch are dropped instead of touching freed memory.
  void retire(std::unique_ptr<IoHandler> h);

  void run();
  void stop() { stopping_ = true; }
  // Destroys retired handlers now (the loop does it after each batch; an owner that stops
  // the loop calls it before the state those handlers use goes away).
  void bury();
  // Thread: any. Runs `fn` on the loop thread soon.
  void post(std::function<void()> fn);

  // Batches socket calls through io_uring (ring.h) from now on. False, with `*why`, when
  // io_uring is not usable here; the loop then keeps making plain system calls.
  bool enable_ring(std::string* why);
  // Null unless enable_ring() succeeded: connections then queue their socket calls on it.
  Ring* ring() { return ring_.get(); }

  uint64_t now_ms() const { return now_ms_; }
  void update_time();
  TimerQueue& timers() { return timers_; }
  void arm(Timer& t, uint64_t duration_ms) { timers_.arm(t, now_ms_, duration_ms); }

 private:
  void drain_posted();
  bool is_retired(IoHandler* h) const;
  void run_ring();

  int epfd_ = -1;
  int wakefd_ = -1;
  bool stopping_ = false;
  uint64_t now_ms_ = 0;
  TimerQueue timers_;
  std::unique_ptr<Ring> ring_;
  std::vector<std::unique_ptr<IoHandler>> graveyard_;
  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;
};

uint64_t monotonic_ms();

}  // namespace sluice::io
