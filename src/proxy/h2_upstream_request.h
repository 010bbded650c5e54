#pragma once
// The HTTP/2 client side of one upstream request (scheme grpc: h2c by prior knowledge;
// grpcs: TLS with ALPN h2, the upstream's tls settings as for https): a
// connection taken from the worker's keep-alive pool (with the nghttp2 session it keeps, see
// H2Client) or newly made, the request submitted as one stream whose body nghttp2 pulls as
// the upstream's windows allow, and the response's head, body and trailers gathered on this
// object. The body is buffered only up to the stream's receive window, which reopens as the
// exchange passes pieces on (consume): a slow client slows the upstream, not memory.
//
// Tries to the same node share a connection, a stream each (H2Mux), up to the server's
// concurrent-stream limit; frames one try reads for another's stream wake that one's owner.

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxy/h1_upstream_request.h"
#include "proxy/h2_client.h"
#include "proxy/h2_mux.h"
#include "proxy/upstream_conn.h"
#include "proxy/upstream_request.h"

namespace sluice::proxy {

// Thread: worker
class H2UpstreamRequest final : public UpstreamRequest, private H2StreamSink {
 public:
  explicit H2UpstreamRequest(const H1UpstreamEnv& env) : env_(env) {}
  ~H2UpstreamRequest() override;

  void prepare(const RequestStart& r) override;
  bool open(const Target& t, bool fresh, UpstreamOwner* owner, int* err) override;
  bool reused() const override { return reused_; }
  bool connected() const override { return conn_ && conn_->ready(); }
  void add_body(std::string_view piece, bool chunked) override;
  void add_body_end(bool chunked) override;
  bool queued() const override { return !out_.empty() || (out_end_ && !eof_sent_); }
  Send send(int* err) override;
  bool answered_early() override;
  bool has_input() const override { return head_done_ || !body_.empty(); }
  Head read_head(http::Method method, http::ResponseHead* head) override;
  std::string_view error() const override { return error_; }
  Body read_body(std::string_view* piece) override;
  void consume() override;
  std::span<const http::Header> trailers() const override { return trailer_views_; }
  bool reusable() const override;
  void release(bool reusable) override;
  bool written() const override { return written_; }
  uint64_t received() const override { return received_; }
  TunnelEnd upgrade() override { return {}; }

 private:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  // H2StreamSink.
  void on_field(std::string_view name, std::string_view value) override;
  void on_fields_done(bool end) override;
  void on_data(const uint8_t* data, size_t len) override;
  void on_end() override { remote_end_ = true; }
  void on_close(uint32_t code) override;
  ssize_t produce(uint8_t* buf, size_t len, uint32_t* flags) override;

  // Reads what the connection has and hands it to nghttp2; false once it ended or broke.
  bool pump_in();
  // Writes the frames nghttp2 has ready; false when the connection broke.
  bool pump_out(int* err);
  bool submit(const Target& t, int* err);
  bool start_tls(UpstreamConn& c, const Target& t, std::string_view name);
  // Tells the owner on the loop's next round that this stream has news another stream's
  // read took in.
  void wake_soon();
  static void on_wake(void* self);
  bool alpn_ok();
  void reset_try();
  // The stream can no longer deliver a response: reset, closed without one, or the
  // connection gone.
  bool gone() const { return eof_ || (closed_ && !remote_end_) || !conn_->h2->usable(); }

  H1UpstreamEnv env_;
  Target target_;
  H2Shared* shared_ = nullptr;    // the connection this try's stream is on, shared
  UpstreamConn* conn_ = nullptr;  // shared_'s
  UpstreamOwner* owner_ = nullptr;
  bool pumping_ = false;  // inside pump_in: callbacks are for streams being read right now
  io::Timer wake_timer_{&H2UpstreamRequest::on_wake, this};
  std::string pool_key_;
  // The prepared request.
  std::string method_, path_;
  Fields fields_;
  RequestStart::Body body_kind_ = RequestStart::Body::kNone;
  uint64_t length_ = 0;
  // This try.
  int32_t stream_id_ = -1;
  bool reused_ = false;
  bool written_ = false;
  uint64_t received_ = 0;
  std::string error_;
  std::deque<std::string_view> out_;  // body pieces not yet copied into DATA frames
  size_t out_off_ = 0;
  bool out_end_ = false;   // add_body_end was called
  bool eof_sent_ = false;  // END_STREAM went to nghttp2
  bool deferred_ = false;  // produce() deferred: resume when a piece comes
  // The response.
  int status_ = 0;
  bool head_done_ = false;
  bool head_end_ = false;  // the head carried END_STREAM (a trailers-only gRPC answer)
  bool remote_end_ = false;
  bool closed_ = false;
  uint32_t close_code_ = 0;
  bool eof_ = false;  // the connection ended
  Fields head_fields_, trailer_fields_;
  std::vector<http::Header> trailer_views_;
  std::deque<std::string> body_;
  bool lent_ = false;
};

}  // namespace sluice::proxy
