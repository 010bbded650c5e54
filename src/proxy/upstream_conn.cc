#include "proxy/upstream_conn.h"

#include <sys/epoll.h>

#include "proxy/h2_client.h"
#include "proxy/pool.h"

namespace sluice::proxy {

UpstreamConn::UpstreamConn(io::EventLoop& loop, int fd, std::string key)
    : transport_(loop, this, fd), key_(std::move(key)) {
  transport_.set_writable(false);
}

UpstreamConn::~UpstreamConn() = default;

void UpstreamConn::start_tls(SSL* ssl, std::shared_ptr<const tls::ClientContext> ctx) {
  tls_ctx_ = std::move(ctx);
  tls_ = std::make_unique<tls::TlsTransport>(transport_, ssl);
}

void UpstreamConn::on_io(uint32_t events) {
  transport_.on_events(events);
  if (owner != nullptr) {
    owner->on_upstream_event();
  } else if (pool != nullptr && transport_.readable()) {
    // An idle HTTP/1.1 connection must stay silent; any byte or FIN (a TLS alert or
    // close_notify too) means it is unusable. An HTTP/2 one may hear control frames (PING,
    // SETTINGS, a late WINDOW_UPDATE), answered here; a GOAWAY or the close ends it.
    if (h2 != nullptr && h2->idle_input(*this)) {
      return;
    }
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
