#pragma once
// Thin helpers over BSD sockets: non-blocking, close-on-exec, errors as errno values.

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "common/status.h"

namespace sluice::io {

// Thread: any (value type)
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  uint16_t port() const;
  std::string ip_text() const;  // "1.2.3.4" or "::1"
};

// Parses a numeric IPv4/IPv6 address (no brackets) and port.
bool make_sockaddr(const std::string& ip, uint16_t port, SockAddr* out);

// A non-blocking listening socket with SO_REUSEPORT, so each worker can own one. It joins any
// listener of the same user on `addr`: call ensure_port_free() first.
common::StatusOr<int> listen_reuseport(const SockAddr& addr, int backlog = 4096);

// Fails with "address already in use: <ip>:<port> is held by pid N (name)" when any socket
// listens on `addr` (or a wildcard covering it): a bind without SO_REUSEPORT is refused by the
// kernel exactly then, so no second gateway joins a running one's SO_REUSEPORT group unasked.
common::Status ensure_port_free(const SockAddr& addr);

// Starts a non-blocking connect. Returns the fd (connect may still be in progress) or -errno.
int connect_nonblocking(const SockAddr& addr);

// 0 when a connect finished well, else the socket error.
int socket_error(int fd);

void set_nodelay(int fd);

}  // namespace sluice::io
