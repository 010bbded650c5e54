// The connection side of an H2UpstreamRequest: where its stream goes (a connection already
// carrying streams to the same node, an idle one from the pool, or a new one, over TLS with
// ALPN h2 for grpcs) and what becomes of the connection when the stream ends.

#include <openssl/ssl.h>

#include <cerrno>
#include <charconv>

#include "proxy/h2_upstream_request.h"

namespace sluice::proxy {

bool H2UpstreamRequest::open(const Target& t, bool fresh, UpstreamOwner* owner, int* err) {
  release(false);
  reset_try();
  target_ = t;
  // Never the key of an HTTP/1.1 connection to the same node: the two do not mix. Over TLS
  // the server name and the client context are in it too, as for https.
  std::string_view name = t.tls != nullptr ? server_name(t.host) : std::string_view();
  pool_key_.assign(*t.key).append("|h2");
  if (t.tls != nullptr) {
    char ctx[20];
    auto end =
        std::to_chars(ctx, ctx + sizeof(ctx), reinterpret_cast<uintptr_t>(t.tls->get()), 16).ptr;
    pool_key_.append(1, '|').append(name).append(1, '|').append(ctx, end);
  }
  // A connection busy with other streams first (multiplexing), then an idle one.
  shared_ = fresh ? nullptr : env_.mux->find(pool_key_);
  std::unique_ptr<UpstreamConn> idle;
  while (!fresh && shared_ == nullptr) {
    idle = env_.pool->take(pool_key_);
    if (!idle || idle->h2->usable()) {
      break;
    }
    env_.loop->retire(std::move(idle));  // a GOAWAY came while it was idle
  }
  reused_ = shared_ != nullptr || idle != nullptr;
  if (shared_ == nullptr && idle == nullptr) {
    int fd = io::connect_nonblocking(*t.addr);
    if (fd < 0) {
      *err = -fd;
      return false;
    }
    idle = std::make_unique<UpstreamConn>(*env_.loop, fd, pool_key_);
    idle->h2 = H2Client::make();
    if (!idle->h2 || (t.tls != nullptr && !start_tls(*idle, t, name))) {
      *err = ENOMEM;
      return false;  // the socket closes with `idle`
    }
    idle->in().reserve_total(env_.read_buffer);
    env_.loop->add(fd, idle.get());
  }
  if (shared_ == nullptr) {
    shared_ = env_.mux->add(pool_key_, std::move(idle));
  }
  env_.mux->attach(shared_, owner);
  owner_ = owner;
  conn_ = shared_->conn.get();
  ++conn_->requests;
  return submit(t, err);
}

// grpcs: TLS offering only h2 by ALPN (RFC 9113 3.2), with the upstream's verification and
// client certificate; the handshake runs with the first write.
bool H2UpstreamRequest::start_tls(UpstreamConn& c, const Target& t, std::string_view name) {
  SSL* ssl = (*t.tls)->new_ssl(name, pool_key_);
  if (ssl == nullptr) {
    return false;
  }
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  if (SSL_set_alpn_protos(ssl, kAlpn, sizeof(kAlpn)) != 0) {
    SSL_free(ssl);
    return false;
  }
  c.start_tls(ssl, *t.tls);
  return true;
}

// After the handshake: the server must have chosen h2, or it would read our frames as
// HTTP/1.1.
bool H2UpstreamRequest::alpn_ok() {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(conn_->tls()->ssl(), &proto, &len);
  if (len == 2 && proto[0] == 'h' && proto[1] == '2') {
    return true;
  }
  error_ = "the upstream did not agree to HTTP/2 in the TLS handshake (ALPN h2)";
  return false;
}

void H2UpstreamRequest::release(bool reusable) {
  out_.clear();
  io::TimerQueue::cancel(wake_timer_);
  if (shared_ == nullptr) {
    return;
  }
  nghttp2_session* ng = conn_->h2->ng();
  if (stream_id_ > 0) {
    nghttp2_session_set_stream_user_data(ng, stream_id_, nullptr);
    size_t left = 0;
    for (const std::string& b : body_) {
      left += b.size();
    }
    if (left > 0) {
      nghttp2_session_consume(ng, stream_id_, left);  // the connection's window comes back
    }
    if (!closed_) {
      // The stream alone ends; the connection (and other streams on it) go on.
      nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, stream_id_, NGHTTP2_CANCEL);
      reusable = false;
    }
  }
  body_.clear();
  lent_ = false;
  UpstreamOwner* attached = owner_;
  owner_ = nullptr;  // no wake for a try that ended
  bool last = shared_->owners.size() <= 1;
  bool keep = reusable;
  int err = 0;
  if (keep && last) {
    pump_in();  // frames that came after the response (a WINDOW_UPDATE, a PING)
    keep = !eof_ && pump_out(&err) && conn_->h2->usable() && !conn_->stream().cancel_read();
  } else if (!last) {
    pump_out(&err);  // our RST_STREAM, if any
  }
  io::SocketTransport& t = conn_->socket();
  tls::TlsTransport* tls = conn_->tls();
  if (tls != nullptr) {
    keep = keep && tls->error().empty();
    if (!conn_->session_kept && tls->handshake_done() && tls->error().empty()) {
      conn_->session_kept = conn_->tls_context()->keep_session(conn_->key(), tls->ssl());
    }
  }
  keep = keep && !t.hangup() && !t.fin() && conn_->requests < target_.pool_requests;
  if (last && keep) {
    t.set_readable(false);
    if (tls != nullptr) {
      tls->release_buffers();
    }
  } else if (last && tls != nullptr && tls->error().empty()) {
    tls->close_notify();
  }
  H2Shared* s = shared_;
  shared_ = nullptr;
  conn_ = nullptr;
  stream_id_ = -1;
  env_.mux->detach(s, attached, keep, target_.pool_size, target_.pool_idle_ms);
}

}  // namespace sluice::proxy
