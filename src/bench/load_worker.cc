// The load thread's loop. Hot path per request: one read, one parse, one clock read, one
// write; no allocation and no epoll_ctl (sockets are registered once, edge-triggered).

#include "bench/load_worker.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bench/clock.h"
#include "bench/wait.h"

namespace sluice::bench {

namespace {

constexpr size_t kReadBuffer = 16 * 1024;
constexpr size_t kMaxReadBuffer = 64 * 1024;  // a head longer than this is a parse error
constexpr int kMaxEvents = 256;
constexpr uint64_t kMs = 1'000'000;

}  // namespace

LoadWorker::LoadWorker(const LoadPlan& plan, StartGate& gate, int index, int connections)
    : plan_(plan), gate_(gate), index_(index), conns_(static_cast<size_t>(connections)) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  for (Conn& c : conns_) {
    c.in.reserve_total(kReadBuffer);
  }
  idle_.reserve(conns_.size());
  // Timeouts and reconnects are checked on a tick, not per request: a scan per tick is cheap
  // and a timeout 5% late does not matter.
  tick_ns_ = std::clamp<uint64_t>(plan.timeout_ns / 20, 1 * kMs, 50 * kMs);
}

LoadWorker::~LoadWorker() {
  for (Conn& c : conns_) {
    close(c);
  }
  if (epfd_ >= 0) {
    ::close(epfd_);
  }
}

uint64_t LoadWorker::intended(uint64_t j) const {
  // Global request i is due at t0 + i/rate; this thread takes i = index + j * threads.
  double i = static_cast<double>(index_) + static_cast<double>(j) * plan_.threads;
  return t0_ + static_cast<uint64_t>(i * 1e9 / *plan_.rate);
}

void LoadWorker::run() {
  if (open_loop()) {
    set_precise_timer_slack();
  }
  uint64_t now = now_ns();
  for (Conn& c : conns_) {
    open(c, now);
  }
  connect_phase();
  t0_ = gate_.arrive_and_wait();
  end_ns_ = t0_ + plan_.duration_ns;
  next_tick_ = t0_ + tick_ns_;
  started_ = true;
  now = now_ns();
  for (Conn& c : conns_) {
    if (c.state == State::kIdle) {
      become_idle(c, now);
    }
  }
  loop();
}

// Waits (at most one timeout) for the first connects, so the clock starts on open sockets.
void LoadWorker::connect_phase() {
  epoll_event events[kMaxEvents];
  uint64_t deadline = now_ns() + plan_.timeout_ns;
  auto connecting = [this] {
    return std::any_of(conns_.begin(), conns_.end(),
                       [](const Conn& c) { return c.state == State::kConnecting; });
  };
  while (connecting() && now_ns() < deadline) {
    int n = wait_until(epfd_, events, kMaxEvents, deadline);
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u64 & 0xffffffff];
      if (c.fd >= 0 && c.gen == events[i].data.u64 >> 32) {
        on_event(c, events[i].events);
      }
    }
  }
}

void LoadWorker::loop() {
  epoll_event events[kMaxEvents];
  while (true) {
    uint64_t now = now_ns();
    if (!stopping_ && open_loop()) {
      dispatch(now);  // first, so requests due before the end go out even after a late wakeup
    }
    if (!stopping_ && now >= end_ns_) {
      begin_stop(now);
    }
    if (stopping_ && (inflight_ == 0 || now >= drain_deadline_)) {
      finish(now);
      return;
    }
    if (now >= next_tick_) {
      housekeeping(now);
      next_tick_ = now + tick_ns_;
    }
    int n = wait_until(epfd_, events, kMaxEvents, next_deadline());
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u64 & 0xffffffff];
      if (c.fd >= 0 && c.gen == events[i].data.u64 >> 32) {
        on_event(c, events[i].events);
      }
    }
  }
}

uint64_t LoadWorker::next_deadline() const {
  uint64_t d = std::min(next_tick_, stopping_ ? drain_deadline_ : end_ns_);
  if (open_loop() && !stopping_ && !idle_.empty()) {
    d = std::min(d, intended(due_));
  }
  return d;
}

void LoadWorker::begin_stop(uint64_t now) {
  stopping_ = true;
  drain_deadline_ = now + plan_.timeout_ns;
  if (open_loop()) {
    while (intended(due_) < end_ns_) {
      ++due_;
    }
  }
}

void LoadWorker::finish(uint64_t now) {
  for (Conn& c : conns_) {
    if (c.state == State::kBusy) {
      stats_.count_error(LoadError::kTimeout);
    }
    close(c);
  }
  inflight_ = 0;
  // Never sent, yet due: their latency is at least the time they have waited so far.
  for (uint64_t j = next_send_; j < due_; ++j) {
    stats_.latency.record(now - intended(j));
  }
  stats_.unsent = due_ - next_send_;
  stats_.finished_ns = now;
}

void LoadWorker::housekeeping(uint64_t now) {
  for (Conn& c : conns_) {
    if ((c.state == State::kConnecting || c.state == State::kBusy) && now >= c.deadline_ns) {
      fail(c, c.state == State::kConnecting ? LoadError::kConnect : LoadError::kTimeout, now);
    } else if (c.state == State::kClosed && !stopping_ && now >= c.retry_ns) {
      open(c, now);
    }
  }
}

void LoadWorker::open(Conn& c, uint64_t now) {
  int fd = io::connect_nonblocking(plan_.addr);
  if (fd < 0) {
    stats_.count_error(LoadError::kConnect);
    c.retry_ns = now + tick_ns_;
    return;
  }
  c.fd = fd;
  ++c.gen;
  c.state = State::kConnecting;
  c.deadline_ns = now + plan_.timeout_ns;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.u64 = (static_cast<uint64_t>(c.gen) << 32) | index_of(c);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void LoadWorker::close(Conn& c) {
  if (c.fd >= 0) {
    ::close(c.fd);  // also leaves the epoll set
    c.fd = -1;
  }
  c.state = State::kClosed;
  c.in.clear();
  c.reader.reset();
  c.written = 0;
}

void LoadWorker::fail(Conn& c, LoadError e, uint64_t now) {
  stats_.count_error(e);
  if (c.state == State::kBusy) {
    --inflight_;  // that request is lost, not retried
  }
  close(c);
  if (e == LoadError::kConnect) {
    c.retry_ns = now + tick_ns_;  // a refused connect is retried on the tick, not in a spin
  } else if (!stopping_) {
    open(c, now);
  }
}

void LoadWorker::on_event(Conn& c, uint32_t events) {
  if (c.state == State::kConnecting) {
    if ((events & (EPOLLERR | EPOLLHUP)) != 0 || io::socket_error(c.fd) != 0) {
      fail(c, LoadError::kConnect, now_ns());
    } else if ((events & EPOLLOUT) != 0) {
      c.state = State::kIdle;
      if (started_) {
        become_idle(c, now_ns());
      }
    }
    return;
  }
  uint32_t gen = c.gen;
  if ((events & EPOLLOUT) != 0 && c.state == State::kBusy && c.written < plan_.request.size()) {
    write_more(c, now_ns());
  }
  if (c.gen == gen && c.fd >= 0 && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    on_readable(c);
  }
}

void LoadWorker::on_readable(Conn& c) {
  uint32_t gen = c.gen;
  while (true) {
    if (c.in.writable() == 0) {
      c.in.compact();
      if (c.in.writable() == 0) {
        if (c.in.capacity() >= kMaxReadBuffer) {
          fail(c, LoadError::kParse, now_ns());
          return;
        }
        c.in.reserve_total(c.in.capacity() * 2);
      }
    }
    size_t room = c.in.writable();
    ssize_t n = ::read(c.fd, c.in.write_ptr(), room);
    if (n > 0) {
      stats_.bytes_read += static_cast<uint64_t>(n);
      c.in.commit(static_cast<size_t>(n));
      process(c);
      // A short read drained the socket; edge-triggered epoll reports what comes later.
      if (c.gen != gen || static_cast<size_t>(n) < room) {
        return;
      }
    } else if (n == 0) {
      uint64_t now = now_ns();
      if (c.state == State::kBusy && c.reader.on_eof() == ResponseReader::Result::kComplete) {
        complete(c, now);  // framed by the close; reconnects
      } else if (c.state == State::kBusy) {
        fail(c, LoadError::kRead, now);
      } else {
        close(c);  // the server closed an idle keep-alive connection: not an error
        if (!stopping_) {
          open(c, now);
        }
      }
      return;
    } else if (errno != EINTR) {
      if (errno != EAGAIN) {
        fail(c, LoadError::kRead, now_ns());
      }
      return;
    }
  }
}

void LoadWorker::process(Conn& c) {
  if (c.state != State::kBusy) {
    fail(c, LoadError::kParse, now_ns());  // bytes nobody asked for
    return;
  }
  ResponseReader::Result r = c.reader.feed(c.in);
  if (r == ResponseReader::Result::kComplete) {
    complete(c, now_ns());
  } else if (r == ResponseReader::Result::kError) {
    fail(c, LoadError::kParse, now_ns());
  }
}

void LoadWorker::complete(Conn& c, uint64_t now) {
  stats_.status[0] += c.reader.interim();
  stats_.count_status(c.reader.status());
  stats_.latency.record(now > c.start_ns ? now - c.start_ns : 0);
  ++stats_.requests;
  --inflight_;
  bool reuse = c.reader.keep_alive() && c.written == plan_.request.size() && c.fd >= 0;
  c.reader.reset();
  c.state = State::kIdle;
  if (!c.in.empty()) {
    fail(c, LoadError::kParse, now);  // more bytes than one response: no pipelining here
  } else if (!reuse) {
    close(c);
    if (!stopping_) {
      open(c, now);
    }
  } else {
    become_idle(c, now);
  }
}

void LoadWorker::become_idle(Conn& c, uint64_t now) {
  if (stopping_) {
    return;
  }
  if (!open_loop()) {
    send(c, now, now);
    return;
  }
  if (!c.in_idle_list) {
    c.in_idle_list = true;
    idle_.push_back(index_of(c));
  }
  dispatch(now);
}

void LoadWorker::dispatch(uint64_t now) {
  while (true) {
    uint64_t t = intended(due_);
    if (t > now || t >= end_ns_) {
      break;
    }
    ++due_;
  }
  while (next_send_ < due_ && !idle_.empty()) {
    Conn& c = conns_[idle_.back()];
    idle_.pop_back();
    c.in_idle_list = false;
    if (c.state == State::kIdle) {
      send(c, intended(next_send_++), now);
    }
  }
}

void LoadWorker::send(Conn& c, uint64_t start_ns, uint64_t now) {
  c.state = State::kBusy;
  c.start_ns = start_ns;
  c.deadline_ns = now + plan_.timeout_ns;
  c.written = 0;
  ++inflight_;
  ++stats_.sent;
  write_more(c, now);
}

void LoadWorker::write_more(Conn& c, uint64_t now) {
  const std::string& req = plan_.request;
  while (c.written < req.size()) {
    ssize_t n = ::send(c.fd, req.data() + c.written, req.size() - c.written, MSG_NOSIGNAL);
    if (n > 0) {
      c.written += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      return;  // EPOLLOUT resumes
    } else if (n >= 0 || errno != EINTR) {
      fail(c, LoadError::kWrite, now);
      return;
    }
  }
}

}  // namespace sluice::bench
