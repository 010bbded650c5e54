// Where an HTTP/1.1 connection becomes an HTTP/2 one: the h2c preface on the first bytes of
// a plain enable_http2 listener, or ALPN h2 after the TLS handshake, hands the connection to
// an H2Session; anything else stays HTTP/1.1, byte for byte as on a listener without HTTP/2.
// Also the few connection calls the session makes.

#include <openssl/ssl.h>

#include <cstring>

#include "common/log.h"
#include "server/client_conn.h"
#include "server/h2_limits.h"
#include "server/worker.h"

namespace sluice::server {

bool ClientConn::detect_h2(Step* s) {
  if (tls_) {
    if (!tls_->handshake_done()) {
      return false;
    }
    h2_pending_ = false;
    const unsigned char* proto = nullptr;
    unsigned int len = 0;
    SSL_get0_alpn_selected(tls_->ssl(), &proto, &len);
    if (len == 2 && std::memcmp(proto, "h2", 2) == 0) {
      *s = start_h2();
      return true;
    }
    return false;
  }
  if (in_.empty()) {
    return false;
  }
  switch (detect_preface(in_.view())) {
    case Preface::kHttp2:
      h2_pending_ = false;
      *s = start_h2();
      return true;
    case Preface::kHttp1:
      h2_pending_ = false;
      return false;
    case Preface::kNeedMore:
      h2_pending_ = !client_eof_;  // at the EOF the HTTP/1.1 path answers what came
      return false;
  }
  return false;
}

ClientConn::Step ClientConn::start_h2() {
  state_ = State::kH2;
  fresh_ = false;
  w_.idle_remove(this);
  io::TimerQueue::cancel(timer_);
  h2_ = std::make_unique<H2Session>(*this, w_);
  if (!h2_->start()) {
    SLUICE_LOG(kError, "client {}: cannot start an HTTP/2 session", peer_ip_);
    close_now();
    return Step::kProgress;
  }
  if (w_.draining()) {
    h2_->on_drain();
  }
  return Step::kProgress;
}

Downstream::Flush ClientConn::flush_h2() {
  switch (flush_out()) {
    case Step::kWait:
      return Flush::kWait;
    case Step::kProgress:
      return Flush::kClosed;
    case Step::kDone:
      break;
  }
  return Flush::kDone;
}

io::Transport::Read ClientConn::read_h2() {
  bool eof = false;
  Step s = read_client(&eof);
  if (eof) {
    return io::Transport::Read::kEof;
  }
  return s == Step::kWait ? io::Transport::Read::kWait : io::Transport::Read::kData;
}

void ClientConn::h2_idle() {
  if (tls_) {
    tls_->release_buffers();
  }
  if (in_.empty() && in_.capacity() != 0 && !transport_->read_pending()) {
    w_.give_buffer(&in_);  // a queued read still writes into in_: then it stays
  }
}

ClientInfo ClientConn::client_info() const {
  return {peer_ip_, peer_addr_, local_port_, tls_ ? &tls_->info() : nullptr, peer_port_, local_ip_};
}

}  // namespace sluice::server
