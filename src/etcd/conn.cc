#include "etcd/conn.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "codec/h1/parser.h"
#include "http/message.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;

namespace {

constexpr size_t kMaxHead = 16384;
constexpr size_t kMaxBody =
    256u << 20;  // a range of the whole prefix; etcd's own cap is 1.5 MiB/value

int remaining_ms(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// Short keep-alive probes, so a member that vanished without a FIN (a dead machine) is noticed
// on an otherwise quiet watch stream within about 10 seconds.
void set_socket_options(int fd) {
  int one = 1, idle = 5, intvl = 2, cnt = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

}  // namespace

// Waits for `events` on fd or for the cancel descriptor; 0 = ready, else an errno-like reason.
Status poll_fd(int fd, short events, int cancel_fd, Deadline deadline, const std::string& url) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
    int n = poll(p, cancel_fd >= 0 ? 2 : 1, remaining_ms(deadline));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Status::error(fmt::format("{}: poll: {}", url, strerror(errno)));
    }
    if (cancel_fd >= 0 && (p[1].revents & POLLIN) != 0) {
      return Status::error(fmt::format("cancelled: {}", url));
    }
    if (n == 0) {
      return Status::error(fmt::format("timeout: {} did not answer in time", url));
    }
    return Status::ok();
  }
}

StatusOr<std::unique_ptr<Conn>> Conn::open(const Endpoint& ep, const TlsContext* tls,
                                           Deadline deadline, int cancel_fd) {
  auto addrs = resolve_host(ep, deadline, cancel_fd);
  if (!addrs) {
    return addrs.status();
  }
  Status last = Status::error(fmt::format("{}: no address", ep.url));
  std::unique_ptr<Conn> conn;
  for (addrinfo* ai = addrs->get(); ai != nullptr && !conn; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Status::error(fmt::format("{}: socket: {}", ep.url, strerror(errno)));
      continue;
    }
    set_socket_options(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last = Status::error(fmt::format("{}: connect: {}", ep.url, strerror(errno)));
      close(fd);
      continue;
    }
    Status w = poll_fd(fd, POLLOUT, cancel_fd, deadline, ep.url);
    int err = 0;
    socklen_t len = sizeof(err);
    if (w && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err != 0) {
      w = Status::error(fmt::format("{}: connect: {}", ep.url, strerror(err)));
    }
    if (!w) {
      last = w;
      close(fd);
      continue;
    }
    conn.reset(new Conn(ep, fd, cancel_fd));
  }
  if (!conn) {
    return last;
  }
  if (ep.tls) {
    if (tls == nullptr) {
      return Status::error(fmt::format("{}: https without a TLS context", ep.url));
    }
    Status st = conn->handshake(*tls, deadline);
    if (!st) {
      return st;
    }
  }
  return conn;
}

Conn::~Conn() {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
  }
  if (fd_ >= 0) {
    close(fd_);
  }
}

Status Conn::fail(std::string_view what) const {
  return Status::error(fmt::format("{}: {}", ep_.url, what));
}

Status Conn::wait(short events, Deadline deadline) {
  return poll_fd(fd_, events, cancel_fd_, deadline, ep_.url);
}

Status Conn::handshake(const TlsContext& tls, Deadline deadline) {
  ssl_ = SSL_new(tls.get());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    return fail("TLS: " + ssl_error_text());
  }
  const config::EtcdTls& s = tls.settings();
  std::string name = s.sni.empty() ? ep_.host : s.sni;
  in6_addr a6;
  in_addr a4;
  bool is_ip =
      inet_pton(AF_INET, name.c_str(), &a4) == 1 || inet_pton(AF_INET6, name.c_str(), &a6) == 1;
  if (!is_ip) {
    SSL_set_tlsext_host_name(ssl_, name.c_str());
  }
  if (s.verify) {
    if (is_ip) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
    } else {
      SSL_set1_host(ssl_, name.c_str());
    }
  }
  SSL_set_connect_state(ssl_);
  for (;;) {
    ERR_clear_error();
    int r = SSL_do_handshake(ssl_);
    if (r == 1) {
      return Status::ok();
    }
    int e = SSL_get_error(ssl_, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      long v = SSL_get_verify_result(ssl_);
      return fail(v != X509_V_OK ? fmt::format("TLS: certificate not trusted: {}",
                                               X509_verify_cert_error_string(v))
                                 : "TLS handshake: " + ssl_error_text());
    }
    Status st = wait(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
    if (!st) {
      return st;
    }
  }
}

// The etcd client keeps its own blocking-with-deadline socket calls rather than io::Transport:
// it runs on the control thread, waits with poll() under a deadline for each call, and speaks
// TLS to etcd through OpenSSL directly; nothing here is on the request path.
Status Conn::write_all(std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    ssize_t n;
    short want = POLLOUT;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int r =
          SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
      if (r > 0) {
        n = r;
      } else {
        int e = SSL_get_error(ssl_, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
          return fail("TLS write: " + ssl_error_text());
        }
        want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        n = -1;
      }
    } else {
      n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return fail(fmt::format("send: {}", strerror(errno)));
      }
    }
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    Status st = wait(want, deadline);
    if (!st) {
      return st;
    }
  }
  return Status::ok();
}

Status Conn::fill(Deadline deadline) {
  char buf[16384];
  for (;;) {
    ssize_t n;
    short want = POLLIN;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      int r = SSL_read(ssl_, buf, sizeof(buf));
      if (r > 0) {
        n = r;
      } else {
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_ZERO_RETURN) {
          return fail("connection closed");
        }
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
          return fail("TLS read: " + ssl_error_text());
        }
        want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        n = -1;
      }
    } else {
      n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) {
        return fail("connection closed");
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return fail(fmt::format("recv: {}", strerror(errno)));
      }
    }
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      got_bytes_ = true;
      return Status::ok();
    }
    Status st = wait(want, deadline);
    if (!st) {
      return st;
    }
  }
}

bool Conn::idle_broken() const {
  if (!in_.empty() || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) {
    return true;  // bytes nobody asked for
  }
  pollfd p = {fd_, POLLIN, 0};
  return poll(&p, 1, 0) != 0;  // readable (EOF, reset, a TLS alert) or an error
}

Status Conn::post(std::string_view path, std::string_view body, std::string_view token,
                  Deadline deadline) {
  reusable_ = false;
  got_bytes_ = false;
  std::string req = fmt::format(
      "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n",
      path, ep_.authority(), body.size());
  if (!token.empty()) {
    req += fmt::format("Authorization: {}\r\n", token);
  }
  req += "\r\n";
  req += body;
  return write_all(req, deadline);
}

Status Conn::parse_head(Deadline deadline) {
  status_ = 0;
  chunked_ = until_close_ = body_done_ = false;
  remaining_ = 0;
  chunk_.reset();
  h1::Limits limits;
  limits.max_header_bytes = kMaxHead;
  for (;;) {
    http::ResponseHead head;
    h1::ParseResult r = h1::parse_response(in_, limits, http::Method::kPost, &head);
    if (r.status == h1::ParseStatus::kError) {
      return fail(fmt::format("malformed response: {}", r.error));
    }
    if (r.status == h1::ParseStatus::kComplete) {
      if (head.status >= 100 && head.status < 200) {
        in_.erase(0, r.consumed);  // 100 Continue and friends: the real answer follows
        continue;
      }
      status_ = head.status;
      reusable_ = head.keep_alive;
      switch (head.body_kind) {
        case http::BodyKind::kNone:
          body_done_ = true;
          break;
        case http::BodyKind::kLength:
          remaining_ = head.content_length;
          if (remaining_ > kMaxBody) {
            return fail("response body too large");
          }
          break;
        case http::BodyKind::kChunked:
          chunked_ = true;
          break;
        case http::BodyKind::kUntilClose:
          until_close_ = true;
          reusable_ = false;
          break;
      }
      in_.erase(0, r.consumed);
      return Status::ok();
    }
    Status st = fill(deadline);
    if (!st) {
      return st;
    }
  }
}

Status Conn::take_body(std::string* out) {
  if (until_close_) {
    out->append(in_);
    in_.clear();
    return Status::ok();
  }
  if (!chunked_) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in_.size()));
    out->append(in_, 0, n);
    in_.erase(0, n);
    remaining_ -= n;
    body_done_ = remaining_ == 0;
    return Status::ok();
  }
  std::string_view in = in_;
  size_t used = 0;
  while (!body_done_ && used < in.size()) {
    h1::ChunkedDecoder::Step s = chunk_.step(in.substr(used));
    used += s.consumed;
    if (s.status == h1::ChunkedDecoder::Status::kError) {
      return fail(fmt::format("malformed chunked body: {}", chunk_.error()));
    }
    if (s.status == h1::ChunkedDecoder::Status::kData) {
      out->append(s.data);
    } else if (s.status == h1::ChunkedDecoder::Status::kDone) {
      body_done_ = true;
    } else {
      break;
    }
  }
  in_.erase(0, used);
  if (out->size() > kMaxBody) {
    return fail("response body too large");
  }
  return Status::ok();
}

StatusOr<Conn::Response> Conn::read_response(Deadline deadline) {
  Status st = parse_head(deadline);
  if (!st) {
    return st;
  }
  Response r;
  r.status = status_;
  for (;;) {
    st = take_body(&r.body);
    if (!st) {
      return st;
    }
    if (body_done_) {
      break;
    }
    st = fill(deadline);
    if (!st) {
      if (until_close_ && st.message().ends_with("connection closed")) {
        break;
      }
      reusable_ = false;
      return st;
    }
  }
  return r;
}

StatusOr<int> Conn::read_stream_head(Deadline deadline) {
  Status st = parse_head(deadline);
  if (!st) {
    return st;
  }
  return status_;
}

Status Conn::read_stream(std::string* out, Deadline deadline) {
  size_t before = out->size();
  for (;;) {
    Status st = take_body(out);
    if (!st) {
      return st;
    }
    if (out->size() > before) {
      return Status::ok();
    }
    if (body_done_) {
      return fail("stream ended");
    }
    st = fill(deadline);
    if (!st) {
      return st;
    }
  }
}

}  // namespace sluice::etcd
