#include "proxy/upstream_conn.h"

#include <sys/epoll.h>

#include "proxy/pool.h"

namespace sluice::proxy {

void UpstreamConn::start_tls(SSL* ssl, std::shared_ptr<const tls::ClientContext> ctx) {
  tls_ctx_ = std::move(ctx);
  tls_ = std::make_unique<tls::TlsTransport>(transport_, ssl);
}

void UpstreamConn::on_io(uint32_t events) {
  transport_.on_events(events);
  if (owner != nullptr) {
    owner->on_upstream_event();
  } else if (pool != nullptr && transport_.readable()) {
    // An idle connection must stay silent; any byte or FIN (a TLS alert or close_notify too)
    // means it is unusable.
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
