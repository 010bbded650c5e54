#pragma once
// The HTTP/2 client side of one upstream connection (scheme grpc): nghttp2's client session
// as the frame codec, fed the bytes the connection reads and asked for the frames to write,
// one batch at a time. It lives on the UpstreamConn, so a kept-alive connection keeps its
// HPACK tables and windows between requests. What belongs to one request (its head, body and
// trailers) lives on that request's H2Stream sink (H2UpstreamRequest), reached through the
// stream's user data; the session itself holds only connection state.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "io/outbox.h"

namespace sluice::proxy {

class UpstreamConn;

// What one client stream's events go to. Thread: worker
class H2StreamSink {
 public:
  virtual ~H2StreamSink() = default;
  // A field of a response HEADERS block: the head's (after any 1xx), or the trailers'.
  virtual void on_field(std::string_view name, std::string_view value) = 0;
  // A HEADERS block ended; `end`: it carried END_STREAM.
  virtual void on_fields_done(bool end) = 0;
  virtual void on_data(const uint8_t* data, size_t len) = 0;
  virtual void on_end() = 0;  // DATA with END_STREAM
  // The stream closed; `code` is its RST_STREAM error code (0: a clean close).
  virtual void on_close(uint32_t code) = 0;
  // nghttp2's data source for the request body.
  virtual ssize_t produce(uint8_t* buf, size_t len, uint32_t* flags) = 0;
};

// The receive window a stream (and, sixteen times it, the connection) gives the upstream: a
// response body not yet passed on to the client is buffered up to this much per stream.
inline constexpr int32_t kH2StreamWindow = 256 * 1024;

// Thread: worker
class H2Client {
 public:
  ~H2Client();
  // A session with its connection preface and SETTINGS queued; null when nghttp2 failed.
  static std::unique_ptr<H2Client> make();

  nghttp2_session* ng() { return ng_; }
  // Hands nghttp2 what the connection read (and empties `in`); false on a protocol error.
  bool feed(std::string_view in);
  // Writes the frames nghttp2 has ready, a batch at a time. kDone: nothing is left to write;
  // kBlocked or kQueued: the socket holds the rest; kError: the connection broke.
  io::Outbox::Result flush(UpstreamConn& c, int* err);
  // A new stream may start on this connection (no GOAWAY, no protocol error, not ended).
  bool usable() const;
  // A stream's read saw the connection end: the others on it see it through this.
  void set_ended() { ended_ = true; }
  bool ended() const { return ended_; }
  // A pooled connection became readable: takes what came (a PING, SETTINGS, a late
  // WINDOW_UPDATE) and answers it. False when the connection is no longer usable.
  bool idle_input(UpstreamConn& c);

 private:
  H2Client() = default;
  bool fill();

  nghttp2_session* ng_ = nullptr;
  std::string wbuf_;  // the batch out_ points into until it is written
  io::Outbox out_;
  bool broken_ = false;
  bool ended_ = false;
};

}  // namespace sluice::proxy
