// The client side of the exchange state machine: reading heads, writing local replies,
// lingering close, timeouts. The upstream half lives in exchange_request.cc /
// exchange_response.cc, the admin detour in admin_exchange.cc, reply heads in local_reply.cc.
// This file is a state machine; step() dispatches on state_ and each handler returns
// kProgress (call again), kWait (an event or timer will call drive()) or kDone.

#include "server/client_conn.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "common/log.h"
#include "server/worker.h"

namespace sluice::server {

ClientConn::ClientConn(Worker& w, int fd, const io::SockAddr& peer, uint16_t local_port,
                       ConnCounter* cap, ListenerKind kind)
    : w_(w),
      fd_(fd),
      peer_ip_(peer.ip_text()),
      local_port_(local_port),
      cap_(cap),
      admin_port_(kind == ListenerKind::kAdmin) {
  w_.idle_add(this);
  peer_addr_ = router::ip_from_sockaddr(peer.get());
  arm_timer(w_.settings().header_timeout_ms);
}

ClientConn::~ClientConn() {
  forget_admin();
  forget_plugin_wait();
  if (writing_) {
    metrics::ConnStats::dec(w_.stats().writing);
  }
  if (up_) {
    up_->owner = nullptr;
    w_.loop().retire(std::move(up_));
  }
  in_.clear();
  w_.give_buffer(&in_);
  w_.give_exchange(std::move(ex_));
  ::close(fd_);
}

void ClientConn::on_io(uint32_t events) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    rd_ready_ = true;
  }
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    rd_fin_ = true;
  }
  if (events & EPOLLOUT) {
    wr_ready_ = true;
  }
  if ((events & (EPOLLHUP | EPOLLERR)) && state_ != State::kLinger) {
    // The client is gone (reset or both halves closed): nothing more can reach it.
    close_now();
  }
  drive();
}

void ClientConn::on_upstream_event() { drive(); }

void ClientConn::on_drain() {
  keep_alive_ = false;
  if (state_ == State::kReadHead && in_.empty() && rd_op_.idle()) {  // not a request arriving
    close_now();
    drive();
  }
}

void ClientConn::drive() {
  while (state_ != State::kClosed) {
    if (step() == Step::kWait) {
      return;
    }
  }
  w_.close_client(this);
}

ClientConn::Step ClientConn::step() {
  // A queued interim response (100 Continue) leaves before anything else.
  if (!out_.empty() && state_ != State::kSendResponse && state_ != State::kLocalReply) {
    if (Step s = flush_out(); s != Step::kDone) {
      return s;
    }
  }
  switch (state_) {
    case State::kReadHead:
      return read_head();
    case State::kConnect:
    case State::kSendRequest:
      return send_request();
    case State::kReadResponse:
      return read_response_head();
    case State::kSendResponse:
      return send_response();
    case State::kAdminBody:
      return read_admin_body();
    case State::kAdminWait:
    case State::kPluginWait:
      return Step::kWait;  // pipelined bytes stay buffered until the answer is written
    case State::kLocalReply:
      return write_local_reply();
    case State::kLinger:
      return linger();
    case State::kClosed:
      return Step::kDone;
  }
  return Step::kDone;
}

ClientConn::Step ClientConn::read_client(bool* eof) {
  *eof = false;
  ssize_t n = 0;
  size_t room = 0;
  int err = 0;
  if (rd_op_.done()) {
    // The read queued on the ring was made; in_ has not changed since.
    int r = rd_op_.take();
    n = r < 0 ? -1 : r;
    err = r < 0 ? -r : 0;
    room = rd_room_;
    if (in_.write_ptr() != rd_at_) {
      // Nothing may move in_ while a read is queued; if something did, the bytes are lost.
      SLUICE_LOG(kError, "client {}: read buffer moved under a queued read; closing", peer_ip_);
      n = -1;
      err = EIO;
    }
  } else {
    if (rd_op_.queued() || !rd_ready_) {
      return Step::kWait;
    }
    if (in_.capacity() == 0) {
      w_.take_buffer(&in_);
    }
    if (in_.writable() == 0) {
      in_.compact();
      if (in_.writable() == 0) {
        if (in_.capacity() >= w_.settings().max_read_buffer) {
          return Step::kWait;  // full: the consumer must drain it first
        }
        in_.reserve_total(std::min(in_.capacity() * 2, w_.settings().max_read_buffer));
      }
    }
    room = in_.writable();
    if (io::Ring* ring = w_.loop().ring()) {
      ring->queue_recv(&rd_op_, this, fd_, in_.write_ptr(), room);
      rd_at_ = in_.write_ptr();
      rd_room_ = room;
      return Step::kWait;
    }
    n = ::recv(fd_, in_.write_ptr(), room, 0);
    err = n < 0 ? errno : 0;
  }
  if (n > 0) {
    in_.commit(static_cast<size_t>(n));
    if (static_cast<size_t>(n) < room) {
      // A short read drained the socket and the next edge re-arms us, unless the client's
      // FIN is already queued: then the next recv() reports EOF and no new edge will come.
      rd_ready_ = rd_fin_;
    }
    return Step::kProgress;
  }
  if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
    rd_ready_ = err == EINTR;
    return Step::kWait;
  }
  rd_ready_ = false;
  client_eof_ = true;
  *eof = true;
  return Step::kProgress;
}

ClientConn::Step ClientConn::read_head() {
  if (!in_.empty()) {
    if (!ex_) {
      ex_ = w_.take_exchange();
    }
    h1::ParseResult r = h1::parse_request(in_.view(), w_.settings().limits, &ex_->req);
    if (r.status == h1::ParseStatus::kComplete) {
      head_len_ = r.consumed;
      start_exchange();
      return Step::kProgress;
    }
    if (r.status == h1::ParseStatus::kError) {
      SLUICE_LOG(kInfo, "client {}: bad request ({}): {}", peer_ip_, r.error_status, r.error);
      local_reply(r.error_status, {}, true);
      return Step::kProgress;
    }
  }
  if (client_eof_ || (w_.draining() && in_.empty() && rd_op_.idle())) {
    close_now();
    return Step::kProgress;
  }
  bool was_empty = in_.empty();
  bool eof = false;
  Step s = read_client(&eof);
  if (s == Step::kWait && w_.draining() && in_.empty() && rd_op_.idle()) {
    close_now();  // the read a drain let finish brought nothing
    return Step::kProgress;
  }
  if (s == Step::kProgress && was_empty && !in_.empty()) {
    w_.idle_remove(this);
    arm_timer(w_.settings().header_timeout_ms);
  }
  return s;
}

ClientConn::Step ClientConn::flush_out() {
  if (!wr_ready_) {
    return Step::kWait;
  }
  int err = 0;
  switch (out_.flush(fd_, &err, w_.loop().ring(), this)) {
    case io::Outbox::Result::kQueued:
      return Step::kWait;
    case io::Outbox::Result::kBlocked:
      wr_ready_ = false;
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
  if (plugins_) {
    end_plugins();
  }
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
  ::shutdown(fd_, SHUT_WR);
  rd_op_.cancel();  // what it read is dropped like the rest; an EOF is read again
  in_.clear();
  state_ = State::kLinger;
  arm_timer(w_.settings().linger_ms);
  return Step::kProgress;
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
  req_body_ = http::BodyKind::kNone;
  req_body_done_ = true;
  if (w_.draining() && in_.empty() && rd_op_.idle()) {
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
  w_.give_exchange(std::move(ex_));
  if (rd_op_.idle()) {  // a queued read still writes into in_
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
  switch (state_) {
    case State::kConnect:
      up_conf_->report_failure(node_, health::Failure::kTimeout);
      try_next_or_fail(504, "connect timeout");
      return;
    case State::kSendRequest:
      if (!ex_->up_out.empty()) {
        try_next_or_fail(504, "send timeout");
      } else {
        close_now();  // the client stopped sending its body
      }
      return;
    case State::kReadResponse:
      up_conf_->report_failure(node_, health::Failure::kTimeout);
      try_next_or_fail(504, "read timeout");
      return;
    case State::kAdminWait:
      admin_timed_out();
      return;
    default:
      close_now();
      return;
  }
}

void ClientConn::close_now() {
  forget_admin();
  forget_plugin_wait();
  if (plugins_) {
    end_plugins();
  }
  if (writing_) {
    writing_ = false;
    metrics::ConnStats::dec(w_.stats().writing);
    w_.refresh_reading();
  }
  io::TimerQueue::cancel(timer_);
  rd_op_.cancel();
  out_.cancel();
  release_upstream(false);
  state_ = State::kClosed;
}

}  // namespace sluice::server
