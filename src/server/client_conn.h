#pragma once
// One client connection speaking HTTP/1.1: the transport and the h1 codec. It reads and
// parses request heads (pipelined ones wait their turn, so responses leave in order), hands
// each request to an Exchange through the Downstream interface (the body de-framed, the
// response framed: length, chunks or the close), keeps the connection alive between requests
// or lingers before closing on rejected input, and detours Admin API requests to the control
// thread (admin_exchange.cc).

#include <cstdint>
#include <memory>
#include <string>

#include "codec/h1/chunked.h"
#include "codec/h1/parser.h"
#include "http/message.h"
#include "io/buffer.h"
#include "io/event_loop.h"
#include "io/outbox.h"
#include "io/socket.h"
#include "io/transport.h"
#include "plugin/plugin.h"
#include "router/ip.h"
#include "server/admin_hook.h"
#include "server/conn_limits.h"
#include "server/downstream.h"
#include "server/exchange.h"
#include "server/h2_session.h"
#include "server/listener.h"
#include "tls/transport.h"

namespace sluice::server {

class Worker;

// The interim answer to `Expect: 100-continue`, sent by the gateway itself.
inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// An Admin API request on a client connection: the request being read, then the answer being
// written. Allocated per admin request only, so proxied requests never pay for it.
// Thread: worker
struct AdminExchange {
  AdminRequest req;
  AdminResponse resp;
  uint64_t wait_id = 0;  // Worker::admin_wait id while submitted; 0 otherwise
};

// The HTTP/1 codec's state for one request and its exchange: taken from the worker's free
// list when a request's first byte arrives and given back when the connection goes idle, so
// an idle keep-alive connection holds none of it.
// Thread: worker
struct H1Message {
  explicit H1Message(Worker& w);
  http::RequestHead req;  // views into the connection's read buffer until released
  std::string head;       // the response head as written
  std::string real_ip;    // the client address a trusted proxy named, when it did
  h1::ChunkedDecoder req_chunked;
  char chunk_hdr[24];
  Exchange exchange;
  // The head's values the access log prints for the connection's own answers (conn_log.cc).
  accesslog::Captured log_head;
};

// Thread: worker
class ClientConn final : public io::IoHandler, public Downstream {
 public:
  // `tls`: the connection speaks TLS (the listener's context); null: plaintext.
  ClientConn(Worker& w, int fd, const io::SockAddr& peer, uint16_t local_port, ConnCounter* cap,
             ListenerKind kind = ListenerKind::kProxy, const tls::ServerContext* tls = nullptr);
  ~ClientConn() override;

  void on_io(uint32_t events) override;
  // Called when the worker starts draining: idle keep-alive connections close now, busy ones
  // after their current response; one that has not sent its first request yet (a client
  // connected just as the drain began, or still in its TLS handshake) gets kDrainGraceMs for
  // it and is served with Connection: close. A tunnel runs until near the drain deadline and
  // is then closed politely (Exchange::on_drain).
  void on_drain();
  int fd() const { return sock_.fd(); }
  ConnCounter* cap() const { return cap_; }
  // Links of the worker's idle list (Worker::idle_add / idle_remove).
  ClientConn* idle_prev = nullptr;
  ClientConn* idle_next = nullptr;
  bool idle = false;
  // Closes an idle connection to make room for a new one.
  void evict();
  // A read is queued on the ring, or made and not yet looked at: a request may be arriving.
  bool read_pending() const { return transport_->read_pending(); }
  // The control thread's answer to the submitted admin request (Worker::on_admin_reply).
  void on_admin_reply(AdminResponse resp);

  // --- what an HTTP/2 session (h2_session.h) uses of the connection it took over ---
  std::string_view peer_ip() const { return peer_ip_; }
  io::Timer& timer() { return timer_; }
  io::Outbox& out() { return out_; }
  io::Buffer& in() { return in_; }
  // Writes out(): kDone, kWait (the socket is full; its send timeout runs) or kClosed.
  Flush flush_h2();
  // Reads into in(): kData, kWait, or kEof (the client is gone).
  io::Transport::Read read_h2();
  // No stream is open: the read buffer (and TLS's) go back until bytes come, as for an idle
  // HTTP/1.1 connection.
  void h2_idle();
  // The request goes to the Admin API (an admin port, or its path on a proxy port).
  bool admin_request(const http::RequestHead& req) const;
  // On a TLS connection with client verification: false (the request is answered 400) when
  // this request needs a verified certificate it lacks (APISIX's verify_https_client).
  bool tls_client_ok(const http::RequestHead& req);
  // The peer, the port it came in on and the TLS session, as an exchange sees them.
  ClientInfo client_info() const;

  // Downstream: what the exchange sees of this connection.
  std::string_view request_head() const override { return {in_.data(), head_len_}; }
  void release_head() override;
  Body read_body(std::string_view* piece) override;
  void consume_body() override;
  bool body_done() const override { return req_body_done_; }
  void send_continue() override;
  void send_head(const ResponseStart& r) override;
  void send_data(std::string_view data) override;
  void send_end() override;
  Flush flush() override;
  uint64_t head_bytes() const override { return msg_ ? msg_->head.size() : 0; }
  uint64_t body_bytes() const override { return body_out_; }
  uint64_t request_bytes() const override { return request_in_; }
  void wake() override { drive(); }
  proxy::TunnelEnd upgrade() override;

 private:
  enum class State {
    kReadHead,    // waiting for (the rest of) a request head
    kExchange,    // an exchange has the request
    kAdminBody,   // an admin request's body is being read whole
    kAdminWait,   // an admin request is with the control thread; nothing is read
    kLocalReply,  // the connection's own answer (bad request, admin) is being written
    kLinger,      // rejected: draining the client's leftover bytes before closing
    kH2,          // an HTTP/2 session (h2_) has the connection
    kClosed,
  };
  enum class Step { kProgress, kWait, kDone };

  void drive();
  void charge_cpu(plugin::CpuMeter& meter);
  Step step();
  Step read_head();
  void start_request();
  void start_exchange();
  Step run_exchange();
  // After a response went out whole: the next request, a lingering close, or a close.
  Step end_response();
  // The connection's own answers (local_reply.cc): a bad request, an admin answer.
  void local_reply(int status, std::string_view body, bool close);
  // Writes the head of such an answer into msg_->head: status line, Server, Date,
  // Content-Type (when not empty), `extra_headers` (complete lines), Content-Length and the
  // keep-alive verdict. True when `body_len` bytes of body follow (not HEAD, 1xx, 204, 304).
  bool reply_head(int status, std::string_view content_type, std::string_view extra_headers,
                  size_t body_len, bool close);
  // The admin path (admin_exchange.cc).
  void start_admin();
  Step read_admin_body();
  void submit_admin();
  void admin_timed_out();
  void forget_admin();
  void next_request();
  void go_idle();
  // Writes out_ to the client: kDone when all is sent, kWait when the socket is full,
  // kProgress after closing on a write error.
  Step flush_out();
  Step write_local_reply();
  Step linger();
  Step read_client(bool* eof);
  void arm_timer(uint32_t ms);
  static void on_timeout(void* self);
  void handle_timeout();
  void close_now();
  Exchange* exchange() { return msg_ ? &msg_->exchange : nullptr; }
  // HTTP/2 was detected (the h2c preface, or ALPN h2): the session takes the connection.
  Step start_h2();
  // On an enable_http2 listener, before the first request: true once HTTP/2 took over.
  bool detect_h2(Step* s);
  // The access log's line for an answer of the connection's own (a bad request, the Admin
  // API's) or a request head that never completed (conn_log.cc).
  void log_local(int status, uint64_t bytes_sent, uint64_t body_bytes);
  // Keeps the head's values the access log prints, while msg_->req is valid.
  void capture_for_log();

  Worker& w_;
  io::SocketTransport sock_;  // the client's socket
  // TLS over sock_ on an HTTPS listener; null on a plaintext one.
  std::unique_ptr<tls::TlsTransport> tls_;
  io::Transport* transport_;  // tls_ or sock_: what the codec reads and writes
  std::string peer_ip_;
  uint16_t peer_port_ = 0;
  std::string local_ip_;  // $server_addr, looked up only when the access log prints it
  router::IpAddr peer_addr_;
  // This request's client: the peer, or the address a trusted proxy named (real_ip.h).
  std::string_view client_ip_;
  router::IpAddr client_addr_;
  uint16_t local_port_;
  ConnCounter* cap_;
  bool admin_port_;  // accepted on an admin listener: every request goes to the Admin API
  State state_ = State::kReadHead;
  bool client_eof_ = false;
  io::Timer timer_{&ClientConn::on_timeout, this};
  io::Buffer in_;
  io::Outbox out_;

  // The request in flight; null while the connection is idle.
  std::unique_ptr<H1Message> msg_;
  std::unique_ptr<AdminExchange> admin_;  // only while an admin request is in flight
  // The h1 codec's view of the message in flight.
  http::Method method_ = http::Method::kGet;
  bool keep_alive_ = true;
  bool client_http10_ = false;
  bool linger_after_ = false;
  bool writing_ = false;  // counted in Worker::stats().writing
  size_t head_len_ = 0;
  bool head_held_ = false;  // the head's bytes are still in in_
  http::BodyKind req_body_ = http::BodyKind::kNone;
  uint64_t req_left_ = 0;
  bool req_body_done_ = true;
  size_t body_consume_ = 0;       // in_ bytes the body piece handed out spans
  bool chunks_out_ = false;       // the response body goes out as chunks
  bool handshake_timed_ = false;  // TLS: the handshake finished and its deadline was lifted
  uint64_t pending_cpu_ns_ = 0;   // CpuMeter: time reading the next request's head
  bool fresh_ = true;             // no byte of a request has arrived on this connection yet
  bool upgraded_ = false;         // handed to a tunnel after a 101: HTTP is over on this connection
  // For the access log: bytes of the response body queued and of the request read, the
  // request's head parsed and its values kept.
  uint64_t body_out_ = 0;
  uint64_t request_in_ = 0;
  bool head_parsed_ = false;
  bool head_captured_ = false;
  // The listener serves HTTP/2 too; until the first bytes (or ALPN) decide, h2_pending_.
  bool h2_allowed_ = false;
  bool h2_pending_ = false;
  std::unique_ptr<H2Session> h2_;
};

// How long a draining worker waits for the first request of a connection it had accepted.
inline constexpr uint32_t kDrainGraceMs = 1000;

}  // namespace sluice::server
