#include "server/listener.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "io/socket.h"
#include "server/worker.h"

namespace sluice::server {

Listener::Listener(Worker& w, int fd, ConnCounter* cap, ListenerKind kind,
                   const tls::ServerContext* tls)
    : w_(w), fd_(fd), port_(0), cap_(cap), kind_(kind), tls_(tls) {
  io::SockAddr local;
  local.len = sizeof(local.storage);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len) == 0) {
    port_ = local.port();
  }
}

Listener::~Listener() { ::close(fd_); }

void Listener::on_io(uint32_t events) {
  while (true) {
    io::SockAddr peer;
    peer.len = sizeof(peer.storage);
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&peer.storage), &peer.len,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        SLUICE_LOG(kError, "accept on port {}: {}", port_, strerror(errno));
      }
      return;
    }
    io::set_nodelay(fd);
    w_.accept_client(fd, peer, port_, cap_, kind_, tls_);
  }
}

}  // namespace sluice::server
