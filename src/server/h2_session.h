#pragma once
// One client connection speaking HTTP/2, over the plain socket (h2c by prior knowledge) or
// TLS (ALPN h2). nghttp2 is the frame codec only: the ClientConn that detected HTTP/2 keeps
// the transport, its read buffer and its output box; this session feeds nghttp2 the bytes
// read, writes what it serializes (one batch at a time, so a client that does not read holds
// one batch), and keeps one H2Stream per request, each driving its own Exchange. Ready
// streams run from step(), never from inside nghttp2's callbacks.
//
// The attacks HTTP/2 servers got wrong are answered here (docs/http2.md): rapid resets and
// floods of PING, SETTINGS and empty DATA frames by token buckets (GOAWAY ENHANCE_YOUR_CALM,
// then the close), oversized header lists by a 431, CONTINUATION floods by nghttp2's cap,
// zero-window stalls by the send timeout, and long-lived connections by a request cap.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/h2_limits.h"

namespace sluice::server {

class ClientConn;
class H2Stream;
class Worker;

// Thread: worker
class H2Session {
 public:
  enum class Result : uint8_t { kProgress, kWait, kClose };

  H2Session(ClientConn& c, Worker& w);
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  // Sets up nghttp2 and queues the server's SETTINGS; false when it could not.
  bool start();
  // One round: ready streams run, serialized frames go out, bytes read go in.
  Result step();
  // The worker drains: GOAWAY (new streams refused), the ones in flight finish.
  void on_drain();
  // The connection's timer: idle (no stream) or its socket blocked too long. True: close.
  bool on_timeout();
  // The connection closes: every stream's exchange ends now.
  void close_all();

  // --- for streams ---
  Worker& worker() { return w_; }
  ClientConn& conn() { return c_; }
  nghttp2_session* ng() { return ng_; }
  void mark_ready(H2Stream* s);
  // A stream's request head is complete (or it closed before): it leaves heads_pending_.
  void head_finished() { --heads_pending_; }
  // Drives the connection for a stream woken from outside (an upstream event, a timer).
  void wake(H2Stream* s);
  // A stream's response made no progress for the send timeout: it is reset.
  void stream_timed_out(H2Stream* s);
  void reset_stream(int32_t id, uint32_t code);
  // Static nghttp2 glue (h2_callbacks.cc).
  static ssize_t read_data(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                           nghttp2_data_source* src, void*);

 private:
  friend struct H2Callbacks;

  bool make_session();  // h2_callbacks.cc: the callbacks and options
  void arm_timer();
  bool run_streams();
  void reap();
  // Serializes pending frames into wbuf_ (one batch) and queues it; false when none.
  bool fill_output();
  // Ends the connection with GOAWAY `code` after what is queued (a flood, a protocol error).
  void fail(uint32_t code, const char* why);
  // A graceful GOAWAY: streams up to `last_id` finish, later ones are refused.
  void goaway(int32_t last_id);
  H2Stream* stream(int32_t id);
  // Frame-level accounting (h2_callbacks.cc).
  int on_begin_headers(const nghttp2_frame* f);
  int on_frame_recv(const nghttp2_frame* f);
  int on_frame_send(const nghttp2_frame* f);
  int on_stream_close(int32_t id);

  ClientConn& c_;
  Worker& w_;
  const H2Settings& cfg_;
  nghttp2_session* ng_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<H2Stream>> streams_;
  std::vector<int32_t> ready_;
  std::vector<int32_t> closed_;
  std::string wbuf_;  // the batch out_ points into until it is written
  TokenBucket resets_;
  TokenBucket control_;
  uint32_t requests_ = 0;
  bool goaway_sent_ = false;
  bool failing_ = false;  // a fatal GOAWAY is queued: close once it is written
  bool driving_ = false;
  // What the connection's timer times now.
  enum class Timer : uint8_t { kNone, kIdle, kHead, kSend };
  Timer timer_ = Timer::kNone;
  uint32_t heads_pending_ = 0;  // streams whose request head is not complete yet
};

}  // namespace sluice::server
