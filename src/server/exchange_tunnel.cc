// The upgrade half of an exchange. A request asks to switch protocols (Upgrade, with the
// `upgrade` connection option, on HTTP/1.1, without a body) on a route with enable_websocket:
// its Upgrade goes up (exchange_head.cc). When the upstream answers 101, the client gets the
// 101, then the exchange hands both connections' streams to a proxy::Tunnel and drives it
// until both sides have closed, the idle timeout (the route's timeout.read) passes, or the
// worker's drain closes it; the log phase runs at that end, as nginx logs an upgraded request
// when its connection closes. The tunnel, the snapshot and the plugin context are this
// exchange's, so a route change or a reload does not touch a tunnel already open.

#include "common/log.h"
#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

bool Exchange::wants_upgrade(const http::RequestHead& req,
                             const http::ConnectionTokens& listed) const {
  // RFC 9110 7.8: an HTTP/1.0 request's Upgrade is ignored. A request with a body is sent as
  // a plain request (a WebSocket handshake is a GET without one, RFC 6455 4.1). A draining
  // worker starts no tunnel.
  if (!st_.route->websocket || req.version_minor == 0 || req.version_major == 2 || st_.has_body ||
      w_.draining()) {
    return false;
  }
  const http::Header* up = req.find("upgrade");
  return up != nullptr && !up->value.empty() && listed.contains("upgrade");
}

// Phase kUpgrade: the 101 goes to the client whole, then the tunnel begins.
Exchange::Step Exchange::write_upgrade() {
  if (Step step; !flushed(&step)) {
    if (step == Step::kWait) {
      io::TimerQueue::cancel(timer_);  // a slow client is the connection's send timeout
    }
    return step;
  }
  proxy::TunnelEnd client = down_->upgrade();
  if (client.stream == nullptr) {
    close_early();  // a downstream that cannot tunnel (none today) never asks to upgrade
    return Step::kClose;
  }
  tunnel_ = std::make_unique<proxy::Tunnel>(client, up_->upgrade(), st_.websocket);
  st_.phase = Phase::kTunnel;
  st_.tunnel_activity = 0;
  // nginx's proxy_read_timeout on an upgraded connection: re-armed whenever either side moves
  // bytes (ngx_http_upstream_process_upgraded), so it is the time the tunnel may stay silent.
  arm(st_.timeouts.read_ms);
  if (w_.draining()) {
    on_drain(w_.drain_left_ms());  // the 101 came after the drain began
  }
  return Step::kProgress;
}

Exchange::Step Exchange::run_tunnel() {
  proxy::Tunnel::State s = tunnel_->step();
  if (s == proxy::Tunnel::State::kOpen) {
    if (tunnel_->activity() != st_.tunnel_activity && st_.drain == TunnelDrain::kNone) {
      st_.tunnel_activity = tunnel_->activity();
      arm(st_.timeouts.read_ms);
    }
    return Step::kWait;
  }
  if (s == proxy::Tunnel::State::kFailed) {
    SLUICE_LOG(kInfo, "route {}: tunnel of client {} ended: {}", st_.route->id, st_.client.ip,
               tunnel_->error());
  }
  close_early();
  return Step::kClose;
}

void Exchange::tunnel_timeout() {
  switch (st_.drain) {
    case TunnelDrain::kNone:
      SLUICE_LOG(kInfo, "route {}: tunnel of client {} silent for {} ms (timeout.read); closing",
                 st_.route->id, st_.client.ip, st_.timeouts.read_ms);
      break;
    case TunnelDrain::kWaiting:
      // Close frames now, while there is time for them to go out and be answered; the
      // worker's deadline closes the tunnel if its peers have not by then.
      tunnel_->close_politely();
      st_.drain = TunnelDrain::kClosing;
      arm(kTunnelCloseLeadMs);
      return;
    case TunnelDrain::kClosing:
      break;
  }
  close_early();
}

void Exchange::on_drain(uint32_t left_ms) {
  if (st_.phase != Phase::kTunnel || st_.drain != TunnelDrain::kNone) {
    return;
  }
  st_.drain = TunnelDrain::kWaiting;
  arm(left_ms - std::min(kTunnelCloseLeadMs, left_ms / 2));
}

void Exchange::drop_tunnel() {
  if (st_.plugins) {
    pctx_.bytes_out += tunnel_->to_client();  // nginx's $bytes_sent counts the tunnel's too
    pctx_.upstream_end_ns = pctx_.timed ? plugin::monotonic_ns() : 0;
  }
  node_finished(true);  // the balancer counted the node busy while the tunnel lived
  tunnel_.reset();
}

}  // namespace sluice::server
