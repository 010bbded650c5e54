#pragma once
// One client connection and the exchange in flight on it: parse a request head, route it,
// forward it to an upstream node over a pooled connection, and stream the response back,
// with backpressure both ways. Requests on one connection are served one at a time, so
// pipelined responses leave in order. Admin API requests are read whole and handed to the
// control thread instead (admin_exchange.cc).

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
#include "proxy/upstream_conn.h"
#include "router/ip.h"
#include "server/conn_limits.h"
#include "server/exchange.h"
#include "server/listener.h"
#include "snapshot/snapshot.h"
#include "upstream/balancer.h"

namespace sluice::server {

class Worker;

// Reason phrase for the status codes the gateway itself produces.
std::string_view status_reason(int status);

// Thread: worker
class ClientConn : public io::IoHandler, public proxy::UpstreamOwner {
 public:
  ClientConn(Worker& w, int fd, const io::SockAddr& peer, uint16_t local_port, ConnCounter* cap,
             ListenerKind kind = ListenerKind::kProxy);
  ~ClientConn() override;

  void on_io(uint32_t events) override;
  void on_upstream_event() override;
  // Called when the worker starts draining: idle connections close now, busy ones after
  // their current response.
  void on_drain();
  int fd() const { return transport_.fd(); }
  ConnCounter* cap() const { return cap_; }
  // Links of the worker's idle list (Worker::idle_add / idle_remove).
  ClientConn* idle_prev = nullptr;
  ClientConn* idle_next = nullptr;
  bool idle = false;
  // Closes an idle connection to make room for a new one.
  void evict();
  // A read is queued on the ring, or made and not yet looked at: a request may be arriving.
  bool read_pending() const { return transport_.read_pending(); }
  // The control thread's answer to the submitted admin request (Worker::on_admin_reply).
  void on_admin_reply(AdminResponse resp);
  // The plugin layer (Worker as plugin::Host): a hook suspended this request under `token`;
  // later its answer arrives.
  plugin::Context& plugin_context() { return ex_->pctx; }
  void plugin_suspended(uint64_t token) { plugin_wait_ = token; }
  void on_plugin_resume(plugin::Action a);

 private:
  enum class State {
    kReadHead,      // waiting for (the rest of) a request head
    kConnect,       // upstream TCP handshake in progress
    kSendRequest,   // request head/body going upstream
    kReadResponse,  // waiting for the upstream's response head
    kSendResponse,  // response streaming to the client
    kAdminBody,     // an admin request's body is being read whole
    kAdminWait,     // an admin request is with the control thread; nothing is read
    kPluginWait,    // a plugin hook suspended the request (limit-count on Redis); nothing is read
    kLocalReply,    // a gateway-made (or admin) response is being written
    kLinger,        // rejected: draining the client's leftover bytes before closing
    kClosed,
  };
  enum class Step { kProgress, kWait, kDone };

  void drive();
  Step step();
  Step read_head();
  void start_exchange();
  // After the request phases: the route's own verdicts (404, 503, 413), then the upstream.
  void route_request();
  // The plugin path (exchange_plugins.cc).
  void begin_plugins(const router::MatchContext& m);
  // Runs the request phases; false when the request was answered or suspended.
  bool run_request_plugins();
  // Response-side phases: header_filter (status known) and, at the exchange's end, log.
  void plugin_header_filter(int status);
  void end_plugins();
  void forget_plugin_wait();
  bool connect_next();
  // Load balancing (exchange_balancer.cc): the chash key's hash (0 unless chash), the next
  // node to try, and the start and end of a try on a node (for least_conn and ewma).
  uint64_t balancer_hash() const;
  int pick_node();
  void node_started(int node);
  void node_finished(bool completed);
  bool take_or_connect(int node, bool fresh);
  void set_host_line(int node);
  Step produce_request_piece();
  Step upstream_write_failed(int err);
  // The request head for the upstream: the client's, with plugins' edits applied.
  void build_upstream_head();
  void append_forwarding_headers(const plugin::RequestEdits* ed);
  Step send_request();
  Step pump_request_body();
  Step read_response_head();
  void build_response_head();
  void append_upstream_headers(bool pass_length, const plugin::ResponseEdits* ed);
  void append_added_headers(const plugin::HeaderEdits& edits);
  Step send_response();
  Step produce_response_piece();
  // Passes a piece of the upstream's body through body_filter into out_; false when a plugin
  // dropped all of it.
  bool add_response_data(std::string_view data);
  // Queues body bytes for the client, framed as a chunk when re-chunking.
  void queue_body(std::string_view data);
  Step read_upstream(bool* eof);
  void finish_exchange();
  void release_upstream(bool reusable);
  void upstream_failed(int status, const char* why);
  // After a failed try (`status` 502 for an error, 504 for a timeout): another node when the
  // request may be sent again and tries and retry_timeout allow it, else answers `status`.
  void try_next_or_fail(int status, const char* why);
  // The request may go to another node: no response byte reached the client, no body byte
  // left the client buffer, and a non-idempotent request reached no upstream.
  bool can_send_again() const;
  bool retry_allowed();
  void note_try(int status);
  bool can_retry_idle_failure() const;
  void local_reply(int status, std::string_view body, bool close);
  // Starts any gateway-made response: builds status line, Server, Date, Content-Type (when
  // not empty), `extra_headers` (complete lines), Content-Length and the keep-alive verdict
  // into ex_->out_head and empties out_. The caller then queues the head and, when this
  // returns true (not HEAD, not 1xx/204/304), the `body_len` bytes of body.
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

  Worker& w_;
  io::SocketTransport transport_;  // the client's socket
  std::string peer_ip_;
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
  size_t out_consume_ = 0;  // upstream buffer bytes to drop once out_ is flushed

  // The request in flight; ex_ is null while the connection is idle.
  std::unique_ptr<Exchange> ex_;
  http::Method method_ = http::Method::kGet;     // the client's
  http::Method up_method_ = http::Method::kGet;  // sent upstream (a plugin may change it)
  bool keep_alive_ = true;
  bool client_http10_ = false;
  bool linger_after_ = false;
  size_t head_len_ = 0;
  snapshot::SnapshotPtr snap_;
  const snapshot::Route* route_ = nullptr;
  const upstream::Upstream* up_conf_ = nullptr;
  http::BodyKind req_body_ = http::BodyKind::kNone;
  uint64_t req_left_ = 0;
  bool req_body_done_ = true;
  size_t up_out_consume_ = 0;  // client buffer bytes to drop once up_out_ is flushed
  bool up_piece_ = false;      // up_out holds a body piece (chunk header buffer in use)
  size_t host_offset_ = 0;     // where the Host line goes in up_head
  size_t host_len_ = 0;

  std::unique_ptr<AdminExchange> admin_;  // only while an admin request is in flight
  bool plugins_ = false;                  // this exchange runs plugin chains (ex_->chains)
  bool writing_ = false;                  // counted in Worker::stats().writing
  uint64_t plugin_wait_ = 0;              // Worker::suspend token while a hook waits; 0 otherwise

  // The upstream side.
  std::unique_ptr<proxy::UpstreamConn> up_;
  int node_ = -1;
  uint64_t tried_ = 0;         // bit per node already tried
  int tries_left_ = 0;         // further nodes we may still try (Upstream::retries)
  uint64_t first_try_ms_ = 0;  // loop time of the first try, for retry_timeout
  bool up_reused_ = false;
  bool req_written_ = false;          // a byte of the request went to an upstream
  bool body_taken_ = false;           // a byte of the request body left in_ for an upstream
  uint64_t lb_hash_ = 0;              // chash: the key's hash, taken while the head is readable
  upstream::Balancer* lb_ = nullptr;  // told about the try on lb_node_ (when still current)
  int lb_node_ = -1;                  // the node of the try in flight; -1 when none
  uint64_t lb_generation_ = 0;        // Worker::balancer_generation() when the try began
  uint64_t lb_start_ms_ = 0;
  bool retried_idle_ = false;
  bool response_started_ = false;  // a byte of the response reached the client outbox

  // The response in flight.
  http::BodyKind resp_body_ = http::BodyKind::kNone;
  uint64_t resp_left_ = 0;
  bool resp_chunk_out_ = false;    // re-frame the body as chunked for the client
  bool resp_done_ = false;         // the upstream body ended
  bool last_chunk_sent_ = false;   // the body's end was handled (last chunk, body_filter eof)
  bool piece_ = false;             // out_ holds a body piece (chunk_hdr in use)
  bool resp_body_allowed_ = true;  // the client's response may carry a body (not HEAD, 204..)
};

}  // namespace sluice::server
