#include "proxy/upstream_conn.h"

#include <sys/epoll.h>
#include <unistd.h>

#include "proxy/pool.h"

namespace sluice::proxy {

UpstreamConn::~UpstreamConn() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void UpstreamConn::on_io(uint32_t events) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    readable = true;
  }
  if (events & (EPOLLHUP | EPOLLERR)) {
    hangup = true;
  }
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    fin = true;
  }
  if (events & EPOLLOUT) {
    writable = true;
  }
  if (owner != nullptr) {
    owner->on_upstream_event();
  } else if (pool != nullptr && readable) {
    // An idle connection must stay silent; any byte or FIN means it is unusable.
    pool->evict(this);
  }
}

void UpstreamConn::on_idle_timeout(void* self) {
  auto* c = static_cast<UpstreamConn*>(self);
  if (c->pool != nullptr) {
    c->pool->evict(c);
  }
}

}  // namespace sluice::proxy
