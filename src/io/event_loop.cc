#include "io/event_loop.h"

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/log.h"

namespace sluice::io {

namespace {
// The wake-up eventfd's handler: a sentinel address, never dereferenced.
IoHandler* const kWakeTag = reinterpret_cast<IoHandler*>(uintptr_t{1});
constexpr int kMaxEvents = 256;
}  // namespace

uint64_t monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

EventLoop::EventLoop() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wakefd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = kWakeTag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev);
  update_time();
}

EventLoop::~EventLoop() {
  bury();
  close(wakefd_);
  close(epfd_);
}

void EventLoop::update_time() { now_ms_ = monotonic_ms(); }

bool EventLoop::add(int fd, IoHandler* h, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = h;
  return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void EventLoop::remove(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::retire(std::unique_ptr<IoHandler> h) { graveyard_.push_back(std::move(h)); }

void EventLoop::bury() {
  // A destructor may retire more handlers (a client retiring its upstream connection).
  while (!graveyard_.empty()) {
    auto dead = std::move(graveyard_);
    graveyard_.clear();
    dead.clear();
  }
}

bool EventLoop::is_retired(IoHandler* h) const {
  for (const auto& g : graveyard_) {
    if (g.get() == h) {
      return true;
    }
  }
  return false;
}

bool EventLoop::enable_ring(std::string* why) {
  if (!ring_) {
    ring_ = Ring::create(256, why);
  }
  return ring_ != nullptr;
}

void EventLoop::run_ring() {
  if (ring_ && !ring_->empty()) {
    ring_->run([this](IoHandler* h) { return graveyard_.empty() || !is_retired(h); });
  }
}

void EventLoop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  ssize_t r = write(wakefd_, &one, sizeof(one));
  (void)r;
}

void EventLoop::drain_posted() {
  uint64_t n;
  ssize_t r = read(wakefd_, &n, sizeof(n));
  (void)r;
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) {
    fn();
  }
}

void EventLoop::run() {
  epoll_event events[kMaxEvents];
  while (!stopping_) {
    int timeout = timers_.next_timeout_ms(now_ms_);
    int n = epoll_wait(epfd_, events, kMaxEvents, timeout);
    update_time();
    if (n < 0 && errno != EINTR) {
      SLUICE_LOG(kCrit, "epoll_wait: {}", errno);
      return;
    }
    for (int i = 0; i < n; ++i) {
      IoHandler* h = static_cast<IoHandler*>(events[i].data.ptr);
      if (h == kWakeTag) {
        drain_posted();
        continue;
      }
      if (!graveyard_.empty() && is_retired(h)) {
        continue;
      }
      h->on_io(events[i].events);
    }
    run_ring();
    timers_.run_due(now_ms_);
    run_ring();
    bury();
  }
}

}  // namespace sluice::io
