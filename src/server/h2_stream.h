#pragma once
// One HTTP/2 stream as its exchange sees it (Downstream): the request head gathered from
// HEADERS (pseudo-fields, cookie crumbs) and handed over as the HTTP/1.1 head the exchange
// already understands, the request body from DATA (buffered only up to the stream's window,
// which is reopened as the exchange consumes), the response as HEADERS and DATA frames pulled
// by nghttp2 through produce() as the peer's windows allow.

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "io/timer.h"
#include "server/client_conn.h"
#include "server/downstream.h"

namespace sluice::server {

class H2Session;

// Thread: worker
class H2Stream final : public Downstream {
 public:
  H2Stream(H2Session& s, int32_t id, std::unique_ptr<H1Message> msg);
  ~H2Stream() override;
  H2Stream(const H2Stream&) = delete;
  H2Stream& operator=(const H2Stream&) = delete;

  int32_t id() const { return id_; }
  // A field of the request head (HEADERS and CONTINUATION, decoded by nghttp2, which has
  // already refused malformed ones and connection-specific fields).
  void on_header(std::string_view name, std::string_view value);
  // The head is complete; `end` when no body follows. The exchange starts at the next run().
  void on_head_done(bool end);
  void on_data(const uint8_t* data, size_t len);
  void on_remote_end() { remote_end_ = true; }
  // nghttp2 closed the stream (both sides ended, or a reset either way).
  void on_closed();
  bool closed() const { return closed_; }
  bool remote_end() const { return remote_end_; }
  // nghttp2's data source: copies queued response bytes into a DATA frame's payload.
  ssize_t produce(uint8_t* buf, size_t len, uint32_t* flags);
  // Starts the exchange once the head is complete, then steps it until it waits.
  void run();
  // The connection is closing: the exchange ends now (log phase), whatever its state.
  void abort();
  // The response went out whole (or the stream closed): request bytes left unread are
  // dropped and their window given back, so one finished stream holds no buffer.
  void drop_body();
  bool ready = false;  // queued on the session's ready list
  uint64_t head_bytes_ = 0;

  // Downstream.
  std::string_view request_head() const override { return head_; }
  void release_head() override {}
  Body read_body(std::string_view* piece) override;
  void consume_body() override;
  bool body_done() const override;
  void send_continue() override;
  void send_head(const ResponseStart& r) override;
  void send_data(std::string_view data) override;
  void send_end() override;
  void send_trailers(std::span<const http::Header> fields) override;
  Flush flush() override;
  uint64_t head_bytes() const override { return head_bytes_; }
  uint64_t body_bytes() const override { return body_out_; }
  uint64_t request_bytes() const override { return head_.size() + body_in_; }
  void wake() override;
  proxy::TunnelEnd upgrade() override { return {}; }

 private:
  void start();
  // The stream's own answer when no exchange can take the request (a bad or oversized head).
  void local_reply(int status);
  bool build_head();
  void submit(int status, const std::vector<nghttp2_nv>& nv, bool body);
  void resume();
  // Submits the trailers, if any, as the body ends (sets NO_END_STREAM in `flags`).
  bool submit_trailers(uint32_t* flags);
  static void on_send_timeout(void* self);

  H2Session& s_;
  int32_t id_;
  std::unique_ptr<H1Message> msg_;
  // The request head as gathered, then as rebuilt for the exchange.
  std::string method_, path_, authority_, scheme_, fields_, cookie_;
  std::string head_;
  size_t list_size_ = 0;  // RFC 9113 6.5.2's size of the header list so far
  bool too_large_ = false;
  bool has_length_ = false;
  bool head_done_ = false;
  bool started_ = false;   // the exchange (or the local reply) began
  bool exchange_ = false;  // an exchange owns the request
  bool done_ = false;      // the exchange finished (or the local reply was queued)
  bool remote_end_ = false;
  bool closed_ = false;
  // The request body as it arrived; the front one may be lent to the exchange.
  std::deque<std::string> body_;
  bool lent_ = false;
  // The response: pieces the exchange keeps valid until flush() says kDone.
  std::deque<std::string_view> out_;
  size_t out_off_ = 0;
  bool end_ = false;       // send_end() was called (or no body follows)
  bool eof_out_ = false;   // the END_STREAM went to nghttp2
  bool deferred_ = false;  // produce() answered NGHTTP2_ERR_DEFERRED: resume on new data
  bool submitted_ = false;
  // Trailers to end the response with (lower-cased names, then values), sent from produce()
  // once the body is out.
  std::vector<std::string> trailers_;
  std::string local_body_;
  uint64_t body_out_ = 0;  // response body bytes queued (the access log's $body_bytes_sent)
  uint64_t body_in_ = 0;   // request body bytes received ($request_length, with the head)
  io::Timer send_timer_{&H2Stream::on_send_timeout, this};
};

}  // namespace sluice::server
