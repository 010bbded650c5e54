// The access log's lines for what a connection answers itself: a request it could not parse
// (400, 414, 431, ...), a TLS client check's 400, the Admin API's answers (APISIX logs its
// admin server's requests too), and a head that never completed (408 on the timeout, 400 when
// the client closed), as nginx logs them.

#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

void ClientConn::capture_for_log() {
  accesslog::Writer* log = w_.access_log();
  if (log == nullptr || !head_parsed_ || head_captured_ || !head_held_) {
    return;
  }
  router::MatchContext m{&msg_->req, client_ip_, client_addr_, local_port_};
  m.tls = tls_ ? &tls_->info() : nullptr;
  msg_->log_head.capture(log->format(), m, request_head());
  head_captured_ = true;
}

void ClientConn::log_local(int status, uint64_t bytes_sent, uint64_t body_bytes) {
  if (w_.access_log() == nullptr) {
    return;
  }
  capture_for_log();  // a head still held (the TLS client check's 400)
  accesslog::Record r;
  r.conn.remote_addr = head_parsed_ ? client_ip_ : std::string_view(peer_ip_);
  r.conn.remote_ip = head_parsed_ ? client_addr_ : peer_addr_;
  r.conn.server_port = local_port_;
  r.conn.tls = tls_ ? &tls_->info() : nullptr;
  r.head = head_captured_ ? &msg_->log_head : nullptr;
  r.remote_port = peer_port_;
  r.server_addr = local_ip_;
  r.status = status;
  r.bytes_sent = bytes_sent;
  r.body_bytes_sent = body_bytes;
  r.request_length = head_parsed_ ? request_in_ : in_.size();
  w_.log_access(r);
}

}  // namespace sluice::server
