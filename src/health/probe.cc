#include "health/probe.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace sluice::health {

namespace {

io::SockAddr probe_addr(const ActiveChecks& conf, const Target& t) {
  io::SockAddr a = t.addr;
  if (conf.port > 0) {
    io::make_sockaddr(t.ip, static_cast<uint16_t>(conf.port), &a);
  }
  return a;
}

// The host part of a Host value ("name:port" or "[v6]:port"), for SNI and verification.
std::string host_only(const std::string& host_header) {
  if (!host_header.empty() && host_header[0] == '[') {
    return host_header.substr(1, host_header.find(']') - 1);
  }
  return host_header.substr(0, host_header.find(':'));
}

}  // namespace

std::string probe_request(const ActiveChecks& conf, const Target& target) {
  std::string r = "GET " + conf.http_path + " HTTP/1.0\r\nHost: ";
  r.append(conf.host.empty() ? target.host_header : conf.host).append("\r\n");
  for (const std::string& h : conf.req_headers) {
    r.append(h).append("\r\n");
  }
  r.append("User-Agent: sluice-health-check\r\nConnection: close\r\n\r\n");
  return r;
}

Probe::Probe(io::EventLoop& loop, SSL_CTX* tls, const Set& set, size_t node, Done done)
    : loop_(loop),
      tls_ctx_(tls),
      conf_(set.checks().active),
      target_(set.targets()[node]),
      done_(std::move(done)) {}

Probe::~Probe() { close_all(); }

void Probe::start() {
  double ms = conf_.timeout * 1000;  // the schema bounds it to no range
  loop_.arm(deadline_, ms < 1 ? 1 : ms > 3.6e6 ? 3600000 : static_cast<uint64_t>(ms));
  fd_ = io::connect_nonblocking(probe_addr(conf_, target_));
  if (fd_ < 0) {
    fd_ = -1;
    finish(Result::kTcpFailure);
    return;
  }
  loop_.add(fd_, this);  // the first event says the connect finished, either way
}

void Probe::on_io(uint32_t events) {
  if (state_ == State::kConnect) {
    int err = io::socket_error(fd_);
    if (err != 0) {
      finish(Result::kTcpFailure);
      return;
    }
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) {
      return;
    }
    if (conf_.type == ProbeType::kTcp) {
      finish(Result::kSuccess);
      return;
    }
    out_ = probe_request(conf_, target_);
    if (conf_.type == ProbeType::kHttps && !begin_tls()) {
      finish(Result::kTcpFailure);
      return;
    }
    state_ = conf_.type == ProbeType::kHttps ? State::kHandshake : State::kSend;
  }
  advance();
}

void Probe::advance() {
  while (true) {
    bool more = false;
    switch (state_) {
      case State::kHandshake:
        more = step_handshake();
        break;
      case State::kSend:
        more = step_send();
        break;
      case State::kRead:
        more = step_read();
        break;
      default:
        return;
    }
    if (!more) {
      return;
    }
  }
}

bool Probe::begin_tls() {
  ssl_ = SSL_new(tls_ctx_);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    return false;
  }
  std::string host = host_only(conf_.host.empty() ? target_.host_header : conf_.host);
  io::SockAddr literal;
  const bool is_ip = io::make_sockaddr(host, 0, &literal);
  if (!host.empty() && !is_ip) {  // SNI takes names only
    SSL_set_tlsext_host_name(ssl_, host.c_str());
  }
  if (conf_.https_verify_certificate) {
    SSL_set_verify(ssl_, SSL_VERIFY_PEER, nullptr);
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
    } else {
      SSL_set1_host(ssl_, host.c_str());
    }
  } else {
    SSL_set_verify(ssl_, SSL_VERIFY_NONE, nullptr);
  }
  SSL_set_connect_state(ssl_);
  return true;
}

bool Probe::step_handshake() {
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    state_ = State::kSend;
    return true;
  }
  int e = SSL_get_error(ssl_, r);
  if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
    finish(Result::kTcpFailure);
  }
  return false;
}

// Probes keep their own socket calls rather than io::Transport: they run on the control
// thread, one small request per interval, and speak TLS through OpenSSL directly (to check a
// node's certificate as the probe's `https_verify_certificate` asks) — nothing here is on the
// request path that the ring batches.
bool Probe::step_send() {
  while (sent_ < out_.size()) {
    const char* p = out_.data() + sent_;
    size_t left = out_.size() - sent_;
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int r = SSL_write(ssl_, p, static_cast<int>(left));
      int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        return false;
      }
      n = e == SSL_ERROR_NONE ? r : -1;
    } else {
      n = send(fd_, p, left, MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return false;
      }
    }
    if (n <= 0) {
      finish(Result::kTcpFailure);
      return false;
    }
    sent_ += static_cast<size_t>(n);
  }
  state_ = State::kRead;
  return true;
}

bool Probe::step_read() {
  char buf[2048];
  while (true) {
    ssize_t n;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int r = SSL_read(ssl_, buf, sizeof(buf));
      int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        return false;
      }
      n = e == SSL_ERROR_NONE ? r : e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    } else {
      n = recv(fd_, buf, sizeof(buf), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return false;
      }
    }
    if (n <= 0) {
      finish(Result::kTcpFailure);  // closed or reset before a status line
      return false;
    }
    in_.append(buf, static_cast<size_t>(n));
    if (in_.find('\n') != std::string::npos || in_.size() > 1024) {
      finish(classify_status_line());
      return false;
    }
  }
}

// "HTTP/1.x NNN ...": the status decides by the healthy and unhealthy lists.
Result Probe::classify_status_line() {
  if (in_.size() < 12 || in_.compare(0, 5, "HTTP/") != 0 || in_[8] != ' ') {
    return Result::kTcpFailure;
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (in_[i] < '0' || in_[i] > '9') {
      return Result::kTcpFailure;
    }
    status = status * 10 + (in_[i] - '0');
  }
  if (conf_.healthy.http_statuses.has(status)) {
    return Result::kSuccess;
  }
  if (conf_.unhealthy.http_statuses.has(status)) {
    return Result::kHttpFailure;
  }
  return Result::kIgnored;
}

void Probe::finish(Result r) {
  if (state_ == State::kDone) {
    return;
  }
  state_ = State::kDone;
  close_all();
  done_(r);  // may retire this probe: nothing touches `this` after it
}

void Probe::close_all() {
  io::TimerQueue::cancel(deadline_);
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (fd_ >= 0) {
    loop_.remove(fd_);
    close(fd_);
    fd_ = -1;
  }
}

}  // namespace sluice::health
