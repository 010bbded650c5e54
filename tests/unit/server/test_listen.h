#pragma once
// A loopback listening socket on a port the kernel picks, for tests that run a real Worker.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include "io/socket.h"

namespace sluice::server {

// Returns the listening fd and stores its port in `*port`.
inline int listen_any(uint16_t* port) {
  io::SockAddr a;
  EXPECT_TRUE(io::make_sockaddr("127.0.0.1", 0, &a));
  auto fd = io::listen_reuseport(a);
  EXPECT_TRUE(fd.is_ok());
  sockaddr_in sin{};
  socklen_t len = sizeof(sin);
  getsockname(*fd, reinterpret_cast<sockaddr*>(&sin), &len);
  *port = ntohs(sin.sin_port);
  return *fd;
}

}  // namespace sluice::server
