// The HTTP/2 connection's loop: nghttp2 set up from sluice.http2, bytes in and frames out
// through the ClientConn's transport, ready streams run, closed ones reaped, GOAWAY on drain,
// at the request cap and on abuse. The nghttp2 callbacks live in h2_callbacks.cc.

#include "server/h2_session.h"

#include "common/log.h"
#include "server/client_conn.h"
#include "server/h2_stream.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// One write batch at most: a client that reads nothing holds this much of our memory.
constexpr size_t kBatch = 64 * 1024;

}  // namespace

H2Session::H2Session(ClientConn& c, Worker& w)
    : c_(c),
      w_(w),
      cfg_(w.settings().h2),
      resets_(cfg_.reset_burst, cfg_.reset_rate),
      control_(cfg_.control_burst, cfg_.control_rate) {}

H2Session::~H2Session() {
  driving_ = true;   // an exchange ending now wakes nothing: the connection is going
  streams_.clear();  // exchanges end (log phase) while the session still exists
  nghttp2_session_del(ng_);
}

void H2Session::close_all() {
  driving_ = true;  // as in the destructor: the connection is closing
  for (auto& [id, s] : streams_) {
    s->abort();
  }
  driving_ = false;
}

bool H2Session::start() {
  if (!make_session()) {
    return false;
  }
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, cfg_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, cfg_.initial_window_size},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, cfg_.max_frame_size},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, cfg_.max_header_list_size},
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
  };
  if (nghttp2_submit_settings(ng_, NGHTTP2_FLAG_NONE, iv, std::size(iv)) != 0) {
    return false;
  }
  // The connection window bounds the request body buffered for all streams together; the
  // default 65535 would let one stalled upload stop every other stream's.
  if (cfg_.connection_window_size > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(ng_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<int32_t>(cfg_.connection_window_size));
  }
  timer_ = Timer::kIdle;
  w_.loop().arm(c_.timer(), w_.settings().keepalive_timeout_ms);
  return true;
}

H2Stream* H2Session::stream(int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void H2Session::mark_ready(H2Stream* s) {
  if (!s->ready) {
    s->ready = true;
    ready_.push_back(s->id());
  }
}

void H2Session::wake(H2Stream* s) {
  mark_ready(s);
  if (!driving_) {
    c_.wake();
  }
}

void H2Session::reset_stream(int32_t id, uint32_t code) {
  nghttp2_submit_rst_stream(ng_, NGHTTP2_FLAG_NONE, id, code);
}

void H2Session::stream_timed_out(H2Stream* s) {
  SLUICE_LOG(kInfo, "client {}: HTTP/2 stream {} timed out sending its response", c_.peer_ip(),
             s->id());
  reset_stream(s->id(), NGHTTP2_CANCEL);
  s->abort();
  c_.wake();
}

void H2Session::goaway(int32_t last_id) {
  if (goaway_sent_) {
    return;
  }
  goaway_sent_ = true;
  nghttp2_submit_goaway(ng_, NGHTTP2_FLAG_NONE, last_id, NGHTTP2_NO_ERROR, nullptr, 0);
}

void H2Session::fail(uint32_t code, const char* why) {
  if (failing_) {
    return;
  }
  SLUICE_LOG(kWarn, "client {}: HTTP/2 connection closed: {}", c_.peer_ip(), why);
  failing_ = true;
  nghttp2_session_terminate_session(ng_, code);
}

void H2Session::on_drain() {
  goaway(nghttp2_session_get_last_proc_stream_id(ng_));
  for (auto& [id, s] : streams_) {
    mark_ready(s.get());
  }
}

bool H2Session::on_timeout() {
  if (timer_ == Timer::kHead && !failing_) {
    SLUICE_LOG(kInfo, "client {}: HTTP/2 request head not complete in time", c_.peer_ip());
  }
  if (timer_ != Timer::kIdle || failing_) {
    return true;  // blocked for the send timeout, a head left half-sent, or a GOAWAY's write
  }
  // Idle for the keep-alive timeout: a polite GOAWAY, then the close once it is written.
  failing_ = true;
  goaway_sent_ = true;
  nghttp2_session_terminate_session(ng_, NGHTTP2_NO_ERROR);
  w_.loop().arm(c_.timer(), w_.settings().send_timeout_ms);
  timer_ = Timer::kNone;
  return false;
}

bool H2Session::run_streams() {
  if (ready_.empty()) {
    return false;
  }
  std::vector<int32_t> batch;
  batch.swap(ready_);
  for (int32_t id : batch) {
    if (H2Stream* s = stream(id)) {
      s->ready = false;
      s->run();
    }
  }
  return true;
}

// Closed streams go, each after a last run: an exchange whose response went out whole
// finishes (log phase, its upstream connection back to the pool); one cut short aborts.
void H2Session::reap() {
  if (closed_.empty()) {
    return;
  }
  std::vector<int32_t> ids;
  ids.swap(closed_);
  driving_ = true;
  for (int32_t id : ids) {
    if (H2Stream* s = stream(id)) {
      s->run();
    }
  }
  driving_ = false;
  for (int32_t id : ids) {
    streams_.erase(id);
  }
}

bool H2Session::fill_output() {
  wbuf_.clear();
  while (wbuf_.size() < kBatch) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(ng_, &data);
    if (n < 0) {
      SLUICE_LOG(kInfo, "client {}: HTTP/2: {}", c_.peer_ip(),
                 nghttp2_strerror(static_cast<int>(n)));
      failing_ = true;
      break;
    }
    if (n == 0) {
      break;
    }
    wbuf_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (wbuf_.empty()) {
    return false;
  }
  c_.out().add(wbuf_);
  return true;
}

// A round: run the ready streams, put their frames and nghttp2's on the wire, hand nghttp2
// what was read, read more. kWait once none of these has anything to do.
H2Session::Result H2Session::step() {
  driving_ = true;
  bool progress = run_streams();
  driving_ = false;
  reap();
  if (!c_.out().empty()) {
    switch (c_.flush_h2()) {
      case Downstream::Flush::kWait:
        timer_ = Timer::kSend;  // armed by the connection when the socket refused bytes
        break;                  // reading goes on: a WINDOW_UPDATE may be what unblocks a stream
      case Downstream::Flush::kClosed:
        return Result::kClose;
      case Downstream::Flush::kDone:
        if (!failing_ && timer_ == Timer::kSend) {
          timer_ = Timer::kNone;  // the send timeout armed while blocked is over
          io::TimerQueue::cancel(c_.timer());
        }
        break;
    }
  }
  if (c_.out().empty() && fill_output()) {
    return Result::kProgress;
  }
  if (c_.out().empty() &&
      (failing_ || (!nghttp2_session_want_read(ng_) && !nghttp2_session_want_write(ng_)))) {
    return Result::kClose;  // the GOAWAY is out, or no stream is left after one
  }
  if (!c_.in().empty()) {
    ssize_t n = nghttp2_session_mem_recv(ng_, reinterpret_cast<const uint8_t*>(c_.in().data()),
                                         c_.in().size());
    c_.in().clear();
    if (n < 0) {
      fail(n == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR,
           nghttp2_strerror(static_cast<int>(n)));
    }
    reap();
    return Result::kProgress;
  }
  if (!failing_) {
    switch (c_.read_h2()) {
      case io::Transport::Read::kData:
        return Result::kProgress;
      case io::Transport::Read::kEof:
        return Result::kClose;
      case io::Transport::Read::kWait:
        break;
    }
  }
  if (progress) {
    return Result::kProgress;
  }
  arm_timer();
  return Result::kWait;
}

// Waiting: a blocked socket keeps its send timeout; with no stream the keep-alive timeout
// runs; a request head begun and not finished gets the header timeout (nothing else times a
// stream that has no exchange yet); other streams time themselves (their exchanges' timers,
// their send timeouts).
void H2Session::arm_timer() {
  if (failing_ || timer_ == Timer::kSend) {
    return;  // the timer bounds the GOAWAY's write, or the blocked socket
  }
  Timer want = streams_.empty() && c_.out().empty() ? Timer::kIdle
               : heads_pending_ > 0                 ? Timer::kHead
                                                    : Timer::kNone;
  if (want == timer_) {
    return;
  }
  timer_ = want;
  if (want == Timer::kIdle) {
    c_.h2_idle();
    std::string().swap(wbuf_);  // out() is empty: nothing points into it
  }
  if (want == Timer::kNone) {
    io::TimerQueue::cancel(c_.timer());
    return;
  }
  const Settings& st = w_.settings();
  w_.loop().arm(c_.timer(), want == Timer::kIdle ? st.keepalive_timeout_ms : st.header_timeout_ms);
}

}  // namespace sluice::server
