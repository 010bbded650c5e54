// The access log's line for an exchange, built from the request's own objects when it ends
// (answered, or given up by the client: nginx's 499), once. The head's values were kept at
// begin(), before the head's bytes could go; the tries were noted as they went.

#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

void Exchange::log_request() {
  if (st_.logged) {
    return;
  }
  st_.logged = true;
  if (w_.access_log() == nullptr) {
    return;
  }
  const uint64_t now = w_.loop().now_ms();
  accesslog::Record r;
  // A plugin (real-ip) may have named another client.
  r.conn.remote_addr = st_.plugins ? pctx_.match.remote_addr : st_.client.ip;
  r.conn.remote_ip = st_.plugins ? pctx_.match.remote_ip : st_.client.addr;
  r.conn.server_port = st_.client.local_port;
  r.conn.tls = st_.client.tls;
  r.head = &log_head_;
  r.remote_port = st_.client.remote_port;
  r.server_addr = st_.client.server_addr;
  if (st_.response_started) {
    r.status = st_.status;
    r.body_bytes_sent = down_->body_bytes();
    if (tunnel_) {
      r.body_bytes_sent += tunnel_->to_client();  // an upgrade: what the tunnel relayed, as nginx
    }
    r.bytes_sent = down_->head_bytes() + r.body_bytes_sent;
  } else {
    r.status = st_.status != 0 ? st_.status : 499;  // nginx: the client went away first
  }
  r.request_length = down_->request_bytes();
  r.request_ms = now - st_.start_ms;
  tries_.end(now);  // the last try's response ends with the request
  r.tries = tries_.all();
  if (st_.up_conf != nullptr) {
    r.upstream_tls = static_cast<bool>(st_.up_conf->tls);
    if (!r.tries.empty() && st_.node >= 0) {
      r.has_upstream_host = true;
      r.upstream_host = host_for(st_.node);
    }
  }
  if (const snapshot::Route* route = st_.route) {
    r.route_id = route->id;
    r.route_name = route->name;
    r.service_id = route->service_id;
    r.service_name = route->service_name;
  }
  if (st_.plugins) {
    r.upstream_uri = pctx_.upstream.uri;
    r.consumer_name = pctx_.consumer;
    r.request_id = pctx_.request_id;
  }
  w_.log_access(r);
}

}  // namespace sluice::server
