#pragma once
// Blocking loopback helpers for the bench tests: a client socket, free ports, a listener that
// never accepts, and an in-process built-in upstream.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bench/upstream_server.h"

namespace sluice::bench {

inline uint16_t port_of(int fd) {
  sockaddr_in sin{};
  socklen_t len = sizeof(sin);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len);
  return ntohs(sin.sin_port);
}

// A listening socket on 127.0.0.1 that nobody accepts from: the kernel completes handshakes
// into the backlog, so clients connect but are never answered.
inline int listen_without_accept(uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  EXPECT_EQ(listen(fd, 64), 0);
  *port = port_of(fd);
  return fd;
}

// A port on 127.0.0.1 that nothing listens on (bound once, then released).
inline uint16_t unused_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  uint16_t port = port_of(fd);
  close(fd);
  return port;
}

// A blocking client connection with a 3 s receive timeout.
inline int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)), 0);
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

inline void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    ASSERT_GT(n, 0);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Reads until the peer closes (or the receive timeout, which the caller's expectations show).
inline std::string read_until_close(int fd, bool* closed = nullptr) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) {
      if (closed != nullptr) {
        *closed = n == 0;
      }
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

// Reads until `out` holds at least `n` bytes.
inline std::string read_at_least(int fd, size_t n) {
  std::string out;
  char buf[4096];
  while (out.size() < n) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r <= 0) {
      break;
    }
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

inline std::unique_ptr<Upstream> start_upstream(uint64_t service_us = 0,
                                                std::string body = "hello world\n") {
  UpstreamOptions o;
  io::make_sockaddr("127.0.0.1", 0, &o.listen);
  o.service_us = service_us;
  o.body = std::move(body);
  auto u = Upstream::start(o);
  EXPECT_TRUE(u.is_ok()) << u.status().message();
  return u.is_ok() ? std::move(*u) : nullptr;
}

}  // namespace sluice::bench
