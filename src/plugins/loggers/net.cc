#include "plugins/loggers/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sluice::plugins::loggers {

using common::Status;
using common::StatusOr;

TlsClient::TlsClient(bool verify) : verify_(verify) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ != nullptr && verify) {
    SSL_CTX_set_default_verify_paths(ctx_);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  }
}

TlsClient::~TlsClient() { SSL_CTX_free(ctx_); }

Conn::~Conn() {
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
  }
  if (fd_ >= 0) {
    close(fd_);
  }
}

Status Conn::wait(bool for_write) {
  pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  int r = poll(&p, 1, static_cast<int>(timeout_ms_));
  if (r == 0) {
    return Status::error("timeout");
  }
  if (r < 0) {
    return Status::error(strerror(errno));
  }
  return Status::ok();
}

namespace {

std::string ssl_error() {
  unsigned long e = ERR_get_error();
  if (e == 0) {
    return "handshake failed";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

bool is_ip(const std::string& host) {
  in6_addr a6;
  in_addr a4;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

Status Conn::handshake(TlsClient* tls, const std::string& name) {
  ssl_ = SSL_new(tls->ctx());
  if (ssl_ == nullptr) {
    return Status::error(ssl_error());
  }
  SSL_set_fd(ssl_, fd_);
  if (!name.empty() && !is_ip(name)) {
    SSL_set_tlsext_host_name(ssl_, name.c_str());
  }
  if (tls->verify()) {
    if (is_ip(name)) {
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
    } else {
      SSL_set1_host(ssl_, name.c_str());
    }
  }
  for (;;) {
    int r = SSL_connect(ssl_);
    if (r == 1) {
      return Status::ok();
    }
    int e = SSL_get_error(ssl_, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      long v = SSL_get_verify_result(ssl_);
      if (v != X509_V_OK) {
        return Status::error(
            fmt::format("certificate verify failed: {}", X509_verify_cert_error_string(v)));
      }
      return Status::error(ssl_error());
    }
    if (Status s = wait(e == SSL_ERROR_WANT_WRITE); !s) {
      return s;
    }
  }
}

StatusOr<std::unique_ptr<Conn>> Conn::open(const std::string& host, uint16_t port, bool udp,
                                           TlsClient* tls, const std::string& sni,
                                           uint64_t timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = udp ? SOCK_DGRAM : SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int e = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); e != 0) {
    return Status::error(gai_strerror(e));
  }
  std::unique_ptr<Conn> c(new Conn());
  c->timeout_ms_ = timeout_ms;
  Status last = Status::error("no address");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = Status::error(strerror(errno));
      continue;
    }
    c->fd_ = fd;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || (errno == EINPROGRESS)) {
      Status s = c->wait(true);
      int err = 0;
      socklen_t len = sizeof(err);
      if (s && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
        freeaddrinfo(res);
        if (tls != nullptr && !udp) {
          if (Status h = c->handshake(tls, sni.empty() ? host : sni); !h) {
            return h;
          }
        }
        return c;
      }
      last = s ? Status::error(strerror(err != 0 ? err : ECONNREFUSED)) : s;
    } else {
      last = Status::error(strerror(errno));
    }
    close(fd);
    c->fd_ = -1;
  }
  freeaddrinfo(res);
  return last;
}

Status Conn::write_all(std::string_view data) {
  while (!data.empty()) {
    ssize_t n;
    if (ssl_ != nullptr) {
      int r =
          SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
      if (r <= 0) {
        int e = SSL_get_error(ssl_, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
          return Status::error(ssl_error());
        }
        if (Status s = wait(e == SSL_ERROR_WANT_WRITE); !s) {
          return s;
        }
        continue;
      }
      n = r;
    } else {
      n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (Status s = wait(true); !s) {
            return s;
          }
          continue;
        }
        if (errno == EINTR) {
          continue;
        }
        return Status::error(strerror(errno));
      }
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::ok();
}

StatusOr<size_t> Conn::read(char* buf, size_t n) {
  for (;;) {
    if (ssl_ != nullptr) {
      int r = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
      if (r > 0) {
        return static_cast<size_t>(r);
      }
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_ZERO_RETURN) {
        return size_t{0};
      }
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        return e == SSL_ERROR_SYSCALL ? size_t{0} : StatusOr<size_t>(Status::error(ssl_error()));
      }
      if (Status s = wait(e == SSL_ERROR_WANT_WRITE); !s) {
        return s;
      }
      continue;
    }
    ssize_t r = recv(fd_, buf, n, 0);
    if (r >= 0) {
      return static_cast<size_t>(r);
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::error(strerror(errno));
    }
    if (Status s = wait(false); !s) {
      return s;
    }
  }
}

bool Conn::stale() const {
  pollfd p{fd_, POLLIN, 0};
  return poll(&p, 1, 0) != 0;  // readable (closed, or bytes nobody asked for) or an error
}

}  // namespace sluice::plugins::loggers
