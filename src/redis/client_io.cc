#include <netdb.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/log.h"
#include "redis/client.h"

// The socket side of Client: resolving, connecting, writing, reading, closing. The request
// side is in client.cc.

namespace sluice::redis {

namespace {

constexpr size_t kReadSize = 16 * 1024;
// A fully written prefix of the output buffer is dropped once it is this large.
constexpr size_t kCompactAt = 64 * 1024;

std::string connect_error_text(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused";
    case ETIMEDOUT:
      return "connect timeout";
    default:
      return fmt::format("connect failed: {}", std::strerror(err));
  }
}

std::string io_error_text(int err) {
  if (err == ECONNRESET || err == EPIPE) {
    return "connection reset";
  }
  return fmt::format("connection error: {}", std::strerror(err));
}

}  // namespace

Client::Conn::~Conn() { ::close(fd); }

void Client::Conn::on_io(uint32_t events) {
  if (owner != nullptr) {
    owner->on_io(events);
  }
}

common::StatusOr<io::SockAddr> resolve_address(const std::string& host, uint16_t port) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  io::SockAddr addr;
  if (io::make_sockaddr(h, port, &addr)) {
    return addr;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(h.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return common::Status::error(
        fmt::format("cannot resolve redis host '{}': {}", host, gai_strerror(rc)));
  }
  std::memcpy(&addr.storage, res->ai_addr, res->ai_addrlen);
  addr.len = static_cast<socklen_t>(res->ai_addrlen);
  freeaddrinfo(res);
  io::SockAddr out;
  io::make_sockaddr(addr.ip_text(), port, &out);
  return out;
}

void Client::start_connect() {
  ++connect_attempts_;
  queue_handshake();
  const int fd = io::connect_nonblocking(addr_);
  if (fd < 0) {
    connect_failed(connect_error_text(-fd));
    return;
  }
  conn_ = std::make_unique<Conn>(fd, this);
  if (!loop_.add(fd, conn_.get())) {
    connect_failed(fmt::format("connect failed: epoll_ctl: {}", std::strerror(errno)));
    return;
  }
  state_ = State::kConnecting;
  loop_.arm(connect_timer_, opts_.connect_timeout_ms > 0 ? opts_.connect_timeout_ms : 1);
}

void Client::on_connect_timeout(void* self) {
  static_cast<Client*>(self)->connect_failed("connect timeout");
}

void Client::on_io(uint32_t events) {
  if (state_ == State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) {
      return;
    }
    const int err = io::socket_error(conn_->fd);
    if (err != 0) {
      connect_failed(connect_error_text(err));
      return;
    }
    on_connected();
  } else if ((events & EPOLLOUT) != 0 && !flush()) {
    return;
  }
  if (state_ == State::kReady && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    read_replies();
  }
}

void Client::on_connected() {
  state_ = State::kReady;
  io::TimerQueue::cancel(connect_timer_);
  flush();
}

// The Redis client keeps its own socket calls rather than io::Transport: its connections
// belong to one worker but carry small RESP commands for limit-count's redis policies, not
// proxied traffic, and they pipeline many requests' commands per write already; moving them
// onto the ring is left until it measures worth it.
bool Client::flush() {
  while (out_off_ < out_.size()) {
    const ssize_t n =
        ::send(conn_->fd, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (n > 0) {
      out_off_ += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (out_off_ >= kCompactAt) {
        out_.erase(0, out_off_);
        out_off_ = 0;
      }
      return true;  // EPOLLOUT comes when there is room
    } else {
      close_with_error(io_error_text(n < 0 ? errno : EPIPE));
      return false;
    }
  }
  out_.clear();
  out_off_ = 0;
  return true;
}

void Client::read_replies() {
  if (!read_buf_) {
    read_buf_ = std::make_unique_for_overwrite<char[]>(kReadSize);
  }
  // Edge-triggered: read until EAGAIN, or the next edge may never come.
  while (state_ == State::kReady) {
    const ssize_t n = ::recv(conn_->fd, read_buf_.get(), kReadSize, 0);
    if (n > 0) {
      if (!consume(std::string_view(read_buf_.get(), static_cast<size_t>(n)))) {
        return;
      }
    } else if (n == 0) {
      close_with_error("connection closed");
      return;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else if (errno != EINTR) {
      close_with_error(io_error_text(errno));
      return;
    }
  }
}

bool Client::consume(std::string_view in) {
  while (!in.empty() && state_ == State::kReady) {
    const Parser::Step step = parser_.feed(in);
    in.remove_prefix(step.consumed);
    if (step.status == Parser::Status::kNeedMore) {
      break;
    }
    if (step.status == Parser::Status::kError) {
      close_with_error("protocol error: " + parser_.error());
      return false;
    }
    on_reply(parser_.reply());
  }
  return state_ == State::kReady;
}

void Client::close_conn() {
  if (conn_) {
    conn_->owner = nullptr;
    loop_.retire(std::move(conn_));  // closes the fd, which takes it out of epoll
  }
  state_ = State::kIdle;
  io::TimerQueue::cancel(connect_timer_);
  parser_.reset();
}

void Client::close_with_error(std::string_view error) {
  SLUICE_LOG(kWarn, "redis {}:{}: {}", opts_.host, opts_.port, error);
  const std::string why(error);  // `error` may point into state that closing resets
  close_conn();
  fail_all(why);
}

void Client::connect_failed(std::string error) {
  SLUICE_LOG(kWarn, "redis {}:{}: {}; no new connection for {} ms", opts_.host, opts_.port, error,
             kReconnectDelayMs);
  close_conn();
  last_error_ = std::move(error);
  retry_at_ms_ = loop_.now_ms() + kReconnectDelayMs;
  fail_all(last_error_);
}

}  // namespace sluice::redis
