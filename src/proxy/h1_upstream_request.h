#pragma once
// The HTTP/1.1 client side of one upstream request: a connection taken from the worker's
// keep-alive pool or newly made (TLS over it for an https upstream), the request's bytes
// written as the exchange queues them, the response head parsed (1xx interim answers skipped)
// and its body de-framed (length, chunks or the close) into pieces that point into the
// connection's read buffer. A request that asked to upgrade may be answered 101; the
// connection is then handed to a tunnel, and closed at its end.

#include <memory>
#include <string>

#include "codec/h1/chunked.h"
#include "codec/h1/parser.h"
#include "io/event_loop.h"
#include "io/outbox.h"
#include "proxy/pool.h"
#include "proxy/upstream_conn.h"
#include "proxy/upstream_request.h"

namespace sluice::proxy {

class H2Mux;

// The server name of a Host value (SNI, and the name verified): its port removed (and an
// IPv6 literal's brackets), as nginx strips it from proxy_ssl_name.
std::string_view server_name(std::string_view host);

// What every H1UpstreamRequest of a worker shares (and every H2UpstreamRequest).
// Thread: worker
struct H1UpstreamEnv {
  io::EventLoop* loop = nullptr;
  Pool* pool = nullptr;
  H2Mux* mux = nullptr;  // HTTP/2 connections carrying streams (gRPC tries)
  const h1::Limits* limits = nullptr;
  size_t read_buffer = 16384;      // a new connection's read buffer
  size_t max_read_buffer = 65536;  // what it may grow to
};

// Thread: worker
class H1UpstreamRequest final : public UpstreamRequest {
 public:
  explicit H1UpstreamRequest(const H1UpstreamEnv& env) : env_(env) {}
  ~H1UpstreamRequest() override;

  void prepare(const RequestStart& r) override;
  bool open(const Target& t, bool fresh, UpstreamOwner* owner, int* err) override;
  bool reused() const override { return reused_; }
  bool connected() const override { return conn_ && conn_->ready(); }
  void add_body(std::string_view piece, bool chunked) override;
  void add_body_end(bool chunked) override;
  bool queued() const override { return !out_.empty(); }
  Send send(int* err) override;
  bool answered_early() override;
  bool has_input() const override { return conn_ && !conn_->in().empty(); }
  Head read_head(http::Method method, http::ResponseHead* head) override;
  std::string_view error() const override { return error_; }
  Body read_body(std::string_view* piece) override;
  void consume() override;
  bool reusable() const override;
  void release(bool reusable) override;
  bool written() const override { return written_; }
  uint64_t received() const override { return received_; }
  TunnelEnd upgrade() override;

 private:
  // A 101 head of `head_len` bytes: checked, and the connection marked for a tunnel.
  Head switched(size_t head_len, const http::ResponseHead& head);
  // One read from the connection; kData, kWait or kEof.
  io::Transport::Read read_more();
  // Puts `host` in the head's Host line (none when empty).
  void set_host(std::string_view host);
  // The key a connection for `t` is pooled under (`name`: its TLS server name).
  const std::string& pool_key(const Target& t, std::string_view name);
  // Keeps a TLS connection's session for resumption, once it is resumable.
  void keep_session();

  H1UpstreamEnv env_;
  Target target_;
  std::unique_ptr<UpstreamConn> conn_;
  io::Outbox out_;
  std::string head_;        // the prepared head, HTTP/1.1 text
  size_t host_offset_ = 0;  // where the Host line goes in head_, and its length
  size_t host_len_ = 0;
  bool reused_ = false;
  bool written_ = false;
  bool upgrade_asked_ = false;  // the prepared request asks to switch protocols
  bool upgraded_ = false;       // this try's connection answered 101: never pooled
  uint64_t received_ = 0;
  std::string_view error_;
  std::string tls_error_;  // a failed handshake's reason, error_ points into it
  std::string pool_key_;   // a TLS try's pool key (capacity kept across requests)
  // The response body being read.
  http::BodyKind kind_ = http::BodyKind::kNone;
  uint64_t left_ = 0;
  bool keep_alive_ = false;
  bool done_ = false;
  size_t consume_ = 0;
  h1::ChunkedDecoder chunked_;
  char chunk_hdr_[24];
};

}  // namespace sluice::proxy
