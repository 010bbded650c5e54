#include "io/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/port_owner.h"

namespace sluice::io {

uint16_t SockAddr::port() const {
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

std::string SockAddr::ip_text() const {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (storage.ss_family == AF_INET6) {
    auto* a6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
      inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof(buf));
    }
  } else {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof(buf));
  }
  return buf;
}

bool make_sockaddr(const std::string& ip, uint16_t port, SockAddr* out) {
  *out = SockAddr{};
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out->storage);
  if (inet_pton(AF_INET, ip.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(port);
    out->len = sizeof(sockaddr_in);
    return true;
  }
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&out->storage);
  if (inet_pton(AF_INET6, ip.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(port);
    out->len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

common::StatusOr<int> listen_reuseport(const SockAddr& addr, int backlog) {
  int fd = socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return common::Status::error(fmt::format("socket: {}", strerror(errno)));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (addr.storage.ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (bind(fd, addr.get(), addr.len) != 0 || listen(fd, backlog) != 0) {
    int e = errno;
    close(fd);
    return common::Status::error(
        fmt::format("cannot listen on {}:{}: {}", addr.ip_text(), addr.port(), strerror(e)));
  }
  return fd;
}

common::Status ensure_port_free(const SockAddr& addr) {
  int fd = socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return common::Status::error(fmt::format("socket: {}", strerror(errno)));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // TIME_WAIT leftovers are fine
  if (addr.storage.ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  int rc = bind(fd, addr.get(), addr.len);
  int e = errno;
  close(fd);
  if (rc == 0) {
    return common::Status::ok();
  }
  if (e != EADDRINUSE) {
    return common::Status::error(
        fmt::format("cannot listen on {}:{}: {}", addr.ip_text(), addr.port(), strerror(e)));
  }
  std::string owner = port_owner(addr.port(), getpid());
  return common::Status::error(fmt::format("address already in use: {}:{} is held by {}",
                                           addr.ip_text(), addr.port(),
                                           owner.empty() ? std::string("another process") : owner));
}

int connect_nonblocking(const SockAddr& addr) {
  int fd = socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -errno;
  }
  set_nodelay(fd);
  if (connect(fd, addr.get(), addr.len) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

int socket_error(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return errno;
  }
  return err;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace sluice::io
