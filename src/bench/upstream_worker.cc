// The upstream's loop. Per request: one read (often shared by pipelined requests), one parse,
// one append of a canned response, one write; no allocation once connections are warm.

#include "bench/upstream_worker.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "bench/clock.h"
#include "bench/upstream_server.h"
#include "bench/wait.h"
#include "codec/h1/parser.h"
#include "io/socket.h"

namespace sluice::bench {

namespace {

constexpr uint64_t kListenTag = 0xffffffffu;
constexpr uint64_t kStopTag = 0xfffffffeu;
constexpr size_t kUpstreamReadBuffer = 16 * 1024;
constexpr size_t kUpstreamMaxReadBuffer = 64 * 1024;  // above every head the parser accepts
constexpr size_t kMaxUnsent = 1024 * 1024;            // stop reading a client that does not read
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
constexpr int kUpstreamMaxEvents = 256;
const h1::Limits kRequestLimits{};

}  // namespace

UpstreamWorker::UpstreamWorker(int listen_fd, int stop_fd, const UpstreamResponses& responses,
                               ServiceClock* clock)
    : listen_fd_(listen_fd),
      stop_fd_(stop_fd),
      responses_(responses),
      clock_(clock),
      head_(std::make_unique<http::RequestHead>()),
      due_(64) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;  // one worker wakes per new connection
  ev.data.u64 = kListenTag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.events = EPOLLIN;
  ev.data.u64 = kStopTag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, stop_fd_, &ev);
}

UpstreamWorker::~UpstreamWorker() {
  for (auto& c : conns_) {
    if (c->fd >= 0) {
      ::close(c->fd);
    }
  }
  if (epfd_ >= 0) {
    ::close(epfd_);
  }
}

void UpstreamWorker::run() {
  if (clock_ != nullptr) {
    set_precise_timer_slack();
  }
  epoll_event events[kUpstreamMaxEvents];
  while (true) {
    uint64_t deadline = due_size_ > 0 ? due_[due_head_].at_ns : kNoDeadline;
    int n = wait_until(epfd_, events, kUpstreamMaxEvents, deadline);
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[i].data.u64;
      if (tag == kStopTag) {
        return;
      }
      if (tag == kListenTag) {
        accept_all();
        continue;
      }
      Conn& c = *conns_[tag & 0xffffffff];
      if (c.fd >= 0 && c.gen == tag >> 32) {
        on_event(c, events[i].events);
      }
    }
    if (due_size_ > 0) {
      fire_due(now_ns());
    }
  }
}

void UpstreamWorker::accept_all() {
  while (true) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;  // EAGAIN: another worker took it, or the backlog is empty
    }
    io::set_nodelay(fd);
    uint32_t idx;
    if (free_.empty()) {
      idx = static_cast<uint32_t>(conns_.size());
      conns_.push_back(std::make_unique<Conn>());
      conns_.back()->index = idx;
      conns_.back()->in.reserve_total(kUpstreamReadBuffer);
    } else {
      idx = free_.back();
      free_.pop_back();
    }
    Conn& c = *conns_[idx];
    c.fd = fd;
    ++c.gen;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = (static_cast<uint64_t>(c.gen) << 32) | idx;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void UpstreamWorker::on_event(Conn& c, uint32_t events) {
  uint32_t gen = c.gen;
  if ((events & EPOLLOUT) != 0 && c.out_off < c.out.size()) {
    flush_and_resume(c);
    if (c.fd < 0 || c.gen != gen) {
      return;
    }
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    on_readable(c);
  }
}

void UpstreamWorker::on_readable(Conn& c) {
  uint32_t gen = c.gen;
  while (c.fd >= 0 && c.gen == gen && !c.paused) {
    if (c.in.writable() == 0) {
      c.in.compact();
      if (c.in.writable() == 0 && c.in.capacity() < kUpstreamMaxReadBuffer) {
        c.in.reserve_total(c.in.capacity() * 2);
      } else if (c.in.writable() == 0) {
        reply(c, Reply::kBad, false);  // cannot happen while the parser's limits hold
        flush(c);
        continue;
      }
    }
    size_t room = c.in.writable();
    ssize_t n = ::read(c.fd, c.in.write_ptr(), room);
    if (n > 0) {
      c.in.commit(static_cast<size_t>(n));
      if (c.closing) {
        c.in.clear();  // after a close-delimited reply: discard until the peer closes
      } else {
        parse_requests(c);
      }
      if (static_cast<size_t>(n) < room) {
        return;  // drained; edge-triggered epoll reports what comes later
      }
    } else if (n == 0) {
      c.peer_closed = true;
      if (c.shut || (c.pending == 0 && c.out_off == c.out.size())) {
        close(c);
      } else {
        c.closing = true;  // answer what was asked, then close
        c.in.clear();
      }
      return;
    } else if (errno != EINTR) {
      if (errno != EAGAIN) {
        close(c);
      }
      return;
    }
  }
}

void UpstreamWorker::parse_requests(Conn& c) {
  while (!c.closing && !c.in.empty()) {
    if (c.out.size() - c.out_off > kMaxUnsent) {
      c.paused = true;
      break;
    }
    if (c.body != http::BodyKind::kNone) {
      if (!consume_body(c)) {
        break;
      }
      continue;
    }
    http::RequestHead& h = *head_;
    h1::ParseResult r = h1::parse_request(c.in.view(), kRequestLimits, &h);
    if (r.status == h1::ParseStatus::kIncomplete) {
      break;
    }
    if (r.status == h1::ParseStatus::kError) {
      reply(c, Reply::kBad, false);
      break;
    }
    c.in.consume(r.consumed);
    Reply rep = !h.keep_alive          ? Reply::kClose
                : h.version_minor == 0 ? Reply::kKeepAlive10
                                       : Reply::kKeepAlive;
    bool head_only = h.method == http::Method::kHead;
    if (h.body_kind == http::BodyKind::kNone) {
      reply(c, rep, head_only);
      continue;
    }
    c.body = h.body_kind;
    c.body_left = h.content_length;
    c.chunked.reset();
    c.body_reply = rep;
    c.body_head_only = head_only;
    if (h.expect_continue && c.pending == 0) {
      c.out.append(kContinue);  // interim; would jump the queue if replies were pending
    }
  }
  flush(c);
}

// Discards request body bytes; true once the body has ended and its reply is queued.
bool UpstreamWorker::consume_body(Conn& c) {
  if (c.body == http::BodyKind::kLength) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(c.body_left, c.in.size()));
    c.in.consume(n);
    c.body_left -= n;
    if (c.body_left > 0) {
      return false;
    }
  } else {
    while (true) {
      h1::ChunkedDecoder::Step s = c.chunked.step(c.in.view());
      c.in.consume(s.consumed);
      if (s.status == h1::ChunkedDecoder::Status::kDone) {
        break;
      }
      if (s.status == h1::ChunkedDecoder::Status::kNeedMore) {
        return false;
      }
      if (s.status == h1::ChunkedDecoder::Status::kError) {
        c.body = http::BodyKind::kNone;
        reply(c, Reply::kBad, false);
        return false;
      }
    }
  }
  c.body = http::BodyKind::kNone;
  reply(c, c.body_reply, c.body_head_only);
  return true;
}

void UpstreamWorker::reply(Conn& c, Reply r, bool head_only) {
  if (r == Reply::kClose || r == Reply::kBad) {
    c.closing = true;  // nothing after this request is read
    c.in.clear();
  }
  if (clock_ == nullptr) {
    append_reply(c, r, head_only);
    return;
  }
  push_due(Due{clock_->complete_at(now_ns()), c.index, c.gen, r, head_only});
  ++c.pending;
}

void UpstreamWorker::append_reply(Conn& c, Reply r, bool head_only) {
  switch (r) {
    case Reply::kKeepAlive:
      c.out.append(responses_.keep_alive);
      break;
    case Reply::kClose:
      c.out.append(responses_.close);
      break;
    case Reply::kKeepAlive10:
      c.out.append(responses_.keep_alive_10);
      break;
    case Reply::kBad:
      c.out.append(responses_.bad_request);
      return;
  }
  if (!head_only) {
    c.out.append(responses_.body);
  }
}

void UpstreamWorker::flush(Conn& c) {
  if (c.fd < 0) {
    return;
  }
  while (c.out_off < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;  // EPOLLOUT resumes
    } else {
      close(c);
      return;
    }
  }
  c.out.clear();
  c.out_off = 0;
  c.paused = false;
  if (c.closing && c.pending == 0 && !c.shut) {
    if (c.peer_closed) {
      close(c);
      return;
    }
    // Half-close and read until the peer closes, so unread request bytes cannot turn our
    // last reply into a reset.
    shutdown(c.fd, SHUT_WR);
    c.shut = true;
  }
}

void UpstreamWorker::flush_and_resume(Conn& c) {
  bool was_paused = c.paused;
  flush(c);
  if (was_paused && c.fd >= 0 && !c.paused) {
    parse_requests(c);
    if (c.fd >= 0 && !c.paused) {
      on_readable(c);
    }
  }
}

void UpstreamWorker::close(Conn& c) {
  ::close(c.fd);
  c.fd = -1;
  c.in.clear();
  c.out.clear();
  c.out_off = 0;
  c.chunked.reset();
  c.body = http::BodyKind::kNone;
  c.closing = c.shut = c.paused = c.peer_closed = false;
  c.pending = 0;
  free_.push_back(c.index);
}

void UpstreamWorker::fire_due(uint64_t now) {
  while (due_size_ > 0 && due_[due_head_].at_ns <= now) {
    Due d = due_[due_head_];
    due_head_ = (due_head_ + 1) % due_.size();
    --due_size_;
    Conn& c = *conns_[d.conn];
    if (c.fd < 0 || c.gen != d.gen) {
      continue;  // the connection went away; its server time was spent all the same
    }
    --c.pending;
    append_reply(c, d.reply, d.head_only);
    flush_and_resume(c);
  }
}

void UpstreamWorker::push_due(const Due& d) {
  if (due_size_ == due_.size()) {
    std::vector<Due> bigger(due_.size() * 2);
    for (size_t i = 0; i < due_size_; ++i) {
      bigger[i] = due_[(due_head_ + i) % due_.size()];
    }
    due_ = std::move(bigger);
    due_head_ = 0;
  }
  due_[(due_head_ + due_size_) % due_.size()] = d;
  ++due_size_;
}

}  // namespace sluice::bench
