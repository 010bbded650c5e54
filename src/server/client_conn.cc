// The connection side of HTTP/1.1: reading heads, handing requests to exchanges, local
// replies, lingering close, timeouts. The codec's Downstream calls (body in, response out)
// live in client_codec.cc, the admin detour in admin_exchange.cc, reply heads in
// local_reply.cc. This file is a state machine: step() dispatches on state_ and each handler
// returns kProgress (call again), kWait (an event or timer will call drive()) or kDone.

#include "server/client_conn.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/log.h"
#include "common/strings.h"
#include "server/h2_limits.h"
#include "server/h2_stream.h"
#include "server/real_ip.h"
#include "server/worker.h"

namespace sluice::server {

H1Message::H1Message(Worker& w)
    : exchange(w, std::make_unique<proxy::H1UpstreamRequest>(w.upstream_env())) {}

namespace {

// A handshake gets this long at most (the head's timeout, when shorter, applies): a client
// that starts one and stalls holds a connection and its SSL for no longer.
constexpr uint32_t kHandshakeTimeoutMs = 10000;

const tls::CertIndex* worker_certs(void* w) { return static_cast<Worker*>(w)->certs(); }

}  // namespace

ClientConn::ClientConn(Worker& w, int fd, const io::SockAddr& peer, uint16_t local_port,
                       ConnCounter* cap, ListenerKind kind, const tls::ServerContext* tls)
    : w_(w),
      sock_(w.loop(), this, fd),
      transport_(&sock_),
      peer_ip_(peer.ip_text()),
      peer_port_(peer.port()),
      local_port_(local_port),
      cap_(cap),
      admin_port_(kind == ListenerKind::kAdmin),
      h2_allowed_(kind == ListenerKind::kProxyH2),
      h2_pending_(h2_allowed_) {
  w_.idle_add(this);
  peer_addr_ = router::ip_from_sockaddr(peer.get());
  if (w_.access_log() != nullptr && w_.access_log()->format().uses(accesslog::Var::kServerAddr)) {
    io::SockAddr local;  // once per connection, as nginx does
    local.len = sizeof(local.storage);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &local.len) == 0) {
      local_ip_ = local.ip_text();
    }
  }
  arm_timer(w_.settings().header_timeout_ms);
  if (tls != nullptr) {
    SSL* ssl = tls->new_ssl(nullptr);
    if (ssl == nullptr) {
      SLUICE_LOG(kError, "client {}: cannot start TLS: {}", peer_ip_, tls::last_error());
      state_ = State::kClosed;  // closed at its first event, never served in plaintext
      return;
    }
    tls_ = std::make_unique<tls::TlsTransport>(sock_, ssl);
    tls_->set_cert_source(&worker_certs, &w_);
    transport_ = tls_.get();
    arm_timer(std::min(w_.settings().header_timeout_ms, kHandshakeTimeoutMs));
  }
}

ClientConn::~ClientConn() {
  transport_->cancel_read();  // before in_ goes back to the worker
  h2_.reset();                // its streams' exchanges end first
  forget_admin();
  if (Exchange* ex = exchange()) {
    ex->abort();
  }
  if (writing_) {
    metrics::ConnStats::dec(w_.stats().writing);
  }
  in_.clear();
  w_.give_buffer(&in_);
  w_.give_message(std::move(msg_));
}

void ClientConn::on_io(uint32_t events) {
  transport_->on_events(events);
  if ((events & (EPOLLHUP | EPOLLERR)) && state_ != State::kLinger &&
      (!upgraded_ || (events & EPOLLERR))) {
    // The client is gone (reset or both halves closed): nothing more can reach it. A tunnel
    // whose halves both closed still reads what the client sent before its close.
    close_now();
  }
  drive();
}

void ClientConn::on_drain() {
  keep_alive_ = false;
  if (state_ == State::kH2) {
    h2_->on_drain();  // GOAWAY: streams in flight finish, new ones are refused
    drive();
    return;
  }
  if (state_ == State::kExchange) {
    msg_->exchange.on_drain(w_.drain_left_ms());  // a tunnel learns its deadline
  }
  if (state_ != State::kReadHead || !in_.empty()) {
    return;  // busy: closes after its response
  }
  if (fresh_) {
    // Its client has a request on the way (closing now would answer it with a reset):
    // a short wait, then the close.
    arm_timer(std::min(w_.settings().header_timeout_ms, kDrainGraceMs));
    return;
  }
  if (!transport_->read_pending()) {
    // One read first: a request already in the socket (a client that sent it just as the
    // drain began) is served, with Connection: close; a connection with nothing closes.
    drive();
  }
}

void ClientConn::drive() {
  plugin::CpuMeter& meter = w_.plugin_local().cpu;
  const bool outer = meter.running;  // a drive within another's (the outer's time is lost)
  const bool timed = meter.on();
  if (timed) [[unlikely]] {
    meter.mark = plugin::monotonic_ns();
    meter.running = true;
  }
  while (state_ != State::kClosed) {
    if (step() == Step::kWait) {
      if (timed) [[unlikely]] {
        charge_cpu(meter);
        meter.running = outer;
      }
      return;
    }
  }
  meter.running = outer;
  w_.close_client(this);
}

// The time since the meter's mark goes to the request in flight, or (reading a head) to the
// next one; an HTTP/2 connection's goes to the stream whose log phase runs next in the drive,
// and what is left to no request (the plugin's calibration spreads it over the others).
void ClientConn::charge_cpu(plugin::CpuMeter& meter) {
  const uint64_t now = plugin::monotonic_ns();
  if (state_ == State::kExchange) {
    msg_->exchange.plugin_context().cpu_ns += meter.take(now);
  } else if (state_ == State::kReadHead) {
    pending_cpu_ns_ += meter.take(now);
  } else {
    meter.skip(now);
  }
}

ClientConn::Step ClientConn::step() {
  // A queued interim response (100 Continue) leaves before anything else.
  if (!out_.empty() && state_ != State::kLocalReply && state_ != State::kH2 &&
      (state_ != State::kExchange || !msg_->exchange.response_started())) {
    if (Step s = flush_out(); s != Step::kDone) {
      return s;
    }
  }
  switch (state_) {
    case State::kReadHead:
      return read_head();
    case State::kExchange:
      return run_exchange();
    case State::kAdminBody:
      return read_admin_body();
    case State::kAdminWait:
      return Step::kWait;  // pipelined bytes stay buffered until the answer is written
    case State::kLocalReply:
      return write_local_reply();
    case State::kLinger:
      return linger();
    case State::kH2:
      switch (h2_->step()) {
        case H2Session::Result::kProgress:
          return Step::kProgress;
        case H2Session::Result::kWait:
          return Step::kWait;
        case H2Session::Result::kClose:
          if (state_ != State::kClosed) {
            close_now();
          }
          return Step::kProgress;
      }
      return Step::kProgress;
    case State::kClosed:
      return Step::kDone;
  }
  return Step::kDone;
}

ClientConn::Step ClientConn::read_client(bool* eof) {
  *eof = false;
  if (in_.capacity() == 0) {
    if (!transport_->readable() || transport_->read_pending()) {
      return Step::kWait;  // an idle connection holds no buffer until bytes may come
    }
    w_.take_buffer(&in_);
  }
  switch (transport_->read(in_, w_.settings().max_read_buffer)) {
    case io::Transport::Read::kData:
      return Step::kProgress;
    case io::Transport::Read::kWait:
      return Step::kWait;
    case io::Transport::Read::kEof:
      break;
  }
  client_eof_ = true;
  *eof = true;
  return Step::kProgress;
}

ClientConn::Step ClientConn::read_head() {
  if (h2_pending_) [[unlikely]] {
    if (Step s; detect_h2(&s)) {
      return s;
    }
  }
  if (!in_.empty() && !h2_pending_) {
    if (!msg_) {
      msg_ = w_.take_message();
    }
    h1::ParseResult r = h1::parse_request(in_.view(), w_.settings().limits, &msg_->req);
    if (r.status == h1::ParseStatus::kComplete) {
      head_len_ = r.consumed;
      head_held_ = true;
      start_request();
      return Step::kProgress;
    }
    if (r.status == h1::ParseStatus::kError) {
      head_parsed_ = false;
      SLUICE_LOG(kInfo, "client {}: bad request ({}): {}", peer_ip_, r.error_status, r.error);
      local_reply(r.error_status, {}, true);
      return Step::kProgress;
    }
  }
  if (client_eof_) {
    if (!in_.empty()) {
      log_local(400, 0, 0);  // a head cut short (nginx: "client prematurely closed connection")
    }
    if (tls_ && !tls_->error().empty()) {
      SLUICE_LOG(kInfo, "client {}: TLS {}: {}", peer_ip_,
                 tls_->handshake_done() ? "connection failed" : "handshake failed", tls_->error());
    }
    close_now();
    return Step::kProgress;
  }
  bool was_empty = in_.empty();
  bool eof = false;
  Step s = read_client(&eof);
  if (tls_ && !handshake_timed_ && tls_->handshake_done()) [[unlikely]] {
    handshake_timed_ = true;  // the handshake's deadline is over: the head's own applies
    if (in_.empty()) {
      arm_timer(
          std::min(w_.settings().header_timeout_ms, w_.draining() ? kDrainGraceMs : UINT32_MAX));
    }
  }
  if (s == Step::kWait && in_.empty() && !transport_->read_pending()) {
    if (w_.draining() && !fresh_) {
      close_now();  // the read a drain let finish brought nothing
      return Step::kProgress;
    }
    if (in_.capacity() != 0) {
      w_.give_buffer(&in_);  // a silent connection holds no buffer until its first byte
    }
  }
  if (s == Step::kProgress && was_empty && !in_.empty()) {
    fresh_ = false;
    w_.idle_remove(this);
    arm_timer(w_.settings().header_timeout_ms);
  }
  return s;
}

// A complete head: the codec's view of the message, the client's address, then the Admin API
// or an exchange.
void ClientConn::start_request() {
  metrics::ConnStats::inc(w_.stats().requests);
  if (!writing_) {
    writing_ = true;
    metrics::ConnStats::inc(w_.stats().writing);
    w_.refresh_reading();
  }
  const http::RequestHead& req = msg_->req;
  request_in_ = head_len_;
  head_parsed_ = true;
  head_captured_ = false;
  method_ = req.method;
  client_http10_ = req.version_minor == 0;
  keep_alive_ = req.keep_alive && !w_.draining();
  req_body_ = req.body_kind;
  req_left_ = req.content_length;
  req_body_done_ = req_body_ == http::BodyKind::kNone;
  body_consume_ = 0;
  msg_->req_chunked.reset();
  client_ip_ = peer_ip_;
  client_addr_ = peer_addr_;
  if (!w_.settings().real_ip.trusted.empty()) [[unlikely]] {
    if (find_real_ip(w_.settings().real_ip, peer_addr_, req, &client_addr_, &msg_->real_ip)) {
      client_ip_ = msg_->real_ip;
    }
  }
  // The one branch the Admin API costs a proxied request (a prefix compare when enabled).
  if (admin_request(req)) [[unlikely]] {
    start_admin();
    return;
  }
  if (tls_ && !tls_client_ok(req)) [[unlikely]] {
    keep_alive_ = false;
    local_reply(400, {}, true);
    return;
  }
  start_exchange();
}

void ClientConn::start_exchange() {
  state_ = State::kExchange;
  io::TimerQueue::cancel(timer_);  // the exchange times its own phases
  const http::TlsInfo* tls = tls_ ? &tls_->info() : nullptr;
  msg_->exchange.begin(*this, msg_->req, head_len_,
                       {client_ip_, client_addr_, local_port_, tls, peer_port_, local_ip_});
  msg_->exchange.plugin_context().cpu_ns = pending_cpu_ns_;  // reading its head
  pending_cpu_ns_ = 0;
}

ClientConn::Step ClientConn::run_exchange() {
  switch (msg_->exchange.step()) {
    case Exchange::Step::kProgress:
      return Step::kProgress;
    case Exchange::Step::kWait:
      return Step::kWait;
    case Exchange::Step::kDone:
      return end_response();
    case Exchange::Step::kClose:
      close_now();
      return Step::kProgress;
  }
  return Step::kProgress;
}

ClientConn::Step ClientConn::end_response() {
  if (keep_alive_) {
    next_request();
    return Step::kProgress;
  }
  if (!linger_after_) {
    close_now();
    return Step::kProgress;
  }
  // Rejected input: close our side, then read and drop what the client still sends so its
  // kernel does not reset the connection before it has read our answer.
  transport_->shutdown_write();
  transport_->cancel_read();  // what it read is dropped like the rest; an EOF is read again
  in_.clear();
  state_ = State::kLinger;
  arm_timer(w_.settings().linger_ms);
  return Step::kProgress;
}

ClientConn::Step ClientConn::flush_out() {
  if (!transport_->writable()) {
    return Step::kWait;
  }
  int err = 0;
  switch (transport_->write(out_, &err)) {
    case io::Outbox::Result::kQueued:
      return Step::kWait;
    case io::Outbox::Result::kBlocked:
      arm_timer(w_.settings().send_timeout_ms);
      return Step::kWait;
    case io::Outbox::Result::kError:
      close_now();
      return Step::kProgress;
    case io::Outbox::Result::kDone:
      break;
  }
  return Step::kDone;
}

ClientConn::Step ClientConn::write_local_reply() {
  if (Step s = flush_out(); s != Step::kDone) {
    return s;
  }
  return end_response();
}

ClientConn::Step ClientConn::linger() {
  bool eof = false;
  while (true) {
    in_.clear();
    Step s = read_client(&eof);
    if (eof) {
      close_now();
      return Step::kProgress;
    }
    if (s == Step::kWait) {
      return Step::kWait;
    }
  }
}

void ClientConn::next_request() {
  state_ = State::kReadHead;
  if (writing_) {
    writing_ = false;
    metrics::ConnStats::dec(w_.stats().writing);
    w_.refresh_reading();
  }
  admin_.reset();  // an admin answer's body was sent from it
  head_parsed_ = false;
  head_captured_ = false;
  req_body_ = http::BodyKind::kNone;
  req_body_done_ = true;
  if (w_.draining() && in_.empty() && !transport_->read_pending()) {
    close_now();
    return;
  }
  if (in_.empty()) {
    go_idle();
    arm_timer(w_.settings().keepalive_timeout_ms);
  } else {
    arm_timer(w_.settings().header_timeout_ms);  // a pipelined request is already here
  }
}

void ClientConn::go_idle() {
  w_.give_message(std::move(msg_));
  if (tls_) {
    tls_->release_buffers();
  }
  if (!transport_->read_pending()) {  // a queued read still writes into in_
    w_.give_buffer(&in_);
  }
  w_.idle_add(this);
}

void ClientConn::evict() {
  close_now();
  w_.close_client(this);
}

void ClientConn::arm_timer(uint32_t ms) { w_.loop().arm(timer_, ms); }

void ClientConn::on_timeout(void* self) {
  auto* c = static_cast<ClientConn*>(self);
  c->handle_timeout();
  c->drive();
}

void ClientConn::handle_timeout() {
  if (state_ == State::kH2) {
    if (h2_->on_timeout()) {
      close_now();
    }
    return;
  }
  if (state_ == State::kAdminWait) {
    admin_timed_out();
    return;
  }
  if (state_ == State::kReadHead && !in_.empty()) {
    log_local(408, 0, 0);  // a head that never completed, as nginx logs it
  }
  close_now();  // a silent client: the head, keep-alive, send or linger timeout
}

void ClientConn::close_now() {
  if (h2_) {
    h2_->close_all();
  }
  forget_admin();
  if (Exchange* ex = exchange()) {
    ex->abort();
  }
  if (writing_) {
    writing_ = false;
    metrics::ConnStats::dec(w_.stats().writing);
    w_.refresh_reading();
  }
  io::TimerQueue::cancel(timer_);
  transport_->cancel_read();
  out_.cancel();
  if (tls_) {
    tls_->close_notify();
  }
  state_ = State::kClosed;
}

}  // namespace sluice::server
