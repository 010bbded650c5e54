#pragma once
// One request's life, protocol-neutral: pin the snapshot, match the route, run the plugin
// phases (which may suspend), pick a node, try it and the next ones as the upstream's retry
// rules allow, pump the request body up and the response back with backpressure both ways,
// answer locally when the gateway has to, and run the log phase at the end. A request its
// route lets upgrade (enable_websocket) that the upstream answers 101 becomes a tunnel
// between the two connections (exchange_tunnel.cc); its log phase runs when the tunnel ends. It
// talks to the client through a Downstream (the connection's codec) and to the node through a
// proxy::UpstreamRequest, so an HTTP/2 stream can drive the same exchange, and tests drive it
// with neither sockets nor a peer (tests/unit/server/exchange_test.cc).
//
// This class is a state machine: step() dispatches on the phase and each handler returns
// kProgress (call again), kWait (an event, timer or answer will wake the downstream), kDone
// (the response is complete) or kClose (the connection must close now).
//
// Exchanges are pooled by the worker: everything about one request lives in `st_`, reset whole
// by begin(); the buffers beside it keep their capacity, so steady state allocates nothing.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "accesslog/record.h"
#include "http/message.h"
#include "io/timer.h"
#include "plugin/chain.h"
#include "proxy/upstream_request.h"
#include "router/ip.h"
#include "server/downstream.h"
#include "snapshot/snapshot.h"

namespace sluice::upstream {
class Balancer;
}

namespace sluice::server {

class Worker;

// The most request body read into memory for a plugin that needs it (client_max_body_size
// when smaller); a bigger body is answered 413.
inline constexpr uint64_t kMaxBufferedBody = 8 << 20;

// Reason phrase for a status code.
std::string_view status_reason(int status);

// Who the client is and where it came in, as the connection knows.
struct ClientInfo {
  std::string_view ip;  // the peer, or the address a trusted proxy named
  router::IpAddr addr;
  uint16_t local_port = 0;
  const router::TlsInfo* tls = nullptr;  // the connection's TLS session; null on plaintext
  uint16_t remote_port = 0;              // the peer's port
  std::string_view server_addr;          // the local address, when the access log prints it
};

// Thread: worker
class Exchange final : public proxy::UpstreamOwner {
 public:
  enum class Step : uint8_t { kProgress, kWait, kDone, kClose };

  // `up` makes this exchange's HTTP/1.1 upstream requests (H1UpstreamRequest; a fake in
  // tests); a gRPC upstream's go through an H2UpstreamRequest made when first needed.
  Exchange(Worker& w, std::unique_ptr<proxy::UpstreamRequest> up);
  ~Exchange() override;

  // Starts a request whose head is complete. `req` points into the downstream's buffer and
  // stays valid until the exchange calls release_head (it copies what it needs later);
  // `head_len` is its size on the wire.
  void begin(Downstream& down, const http::RequestHead& req, size_t head_len,
             const ClientInfo& client);
  Step step();
  // The client went away or the connection closes: ends the try, runs the log phase.
  void abort();
  // The plugin layer (Worker as plugin::Host): a hook suspended this request under `token`;
  // later the worker calls on_plugin_resume with its answer.
  plugin::Context& plugin_context() { return pctx_; }
  void plugin_suspended(uint64_t token) { st_.plugin_wait = token; }
  void on_plugin_resume(plugin::Action a);
  void on_upstream_event() override;
  // The worker drains and closes what is left in `left_ms`: a tunnel is closed politely a
  // little before (kTunnelCloseLeadMs); anything else finishes its response as usual.
  void on_drain(uint32_t left_ms);
  // Between begin() and the end of its response (or its abort).
  bool active() const {
    return st_.phase != Phase::kIdle && st_.phase != Phase::kDone && st_.phase != Phase::kClosed;
  }
  // A byte of the response reached the downstream.
  bool response_started() const { return st_.response_started; }
  // True until release_head(): the downstream must keep the head's bytes.
  bool holds_head() const { return st_.holds_head; }

 private:
  enum class Phase : uint8_t {
    kIdle,
    kReadBody,    // the request body is read whole for a plugin that needs it
    kPluginWait,  // a plugin hook suspended the request
    kConnect,     // the try's connection is being made
    kSend,        // the request head/body going upstream
    kAwaitHead,   // waiting for the upstream's response head
    kStream,      // the response body streaming to the client
    kReply,       // a gateway-made response being written
    kSource,      // a plugin's own response (Context::reply_source) streaming to the client
    kUpgrade,     // a 101 going to the client; the tunnel begins once it is out
    kTunnel,      // bytes relayed both ways until both sides close (exchange_tunnel.cc)
    kDone,        // the response went out whole
    kClosed,      // ended early: the connection must close
  };

  // The request phases around authentication: the rewrite phase of the route's chains, then
  // (a consumer with plugins attached) the rewrite phase of the plugins its merge added, then
  // the rest on the merged chain.
  enum class ConsumerStage : uint8_t { kRouteRewrite, kConsumerRewrite, kRest };

  // A tunnel's end when the worker drains: it runs until shortly before the deadline, then
  // its sides get a Close frame, then the deadline closes what is left.
  enum class TunnelDrain : uint8_t { kNone, kWaiting, kClosing };

  // Everything about one request; begin() resets it whole.
  struct State {
    Phase phase = Phase::kIdle;
    const http::RequestHead* req = nullptr;  // until release_head
    bool holds_head = false;
    size_t head_len = 0;
    http::Method method = http::Method::kGet;     // the client's
    http::Method up_method = http::Method::kGet;  // sent upstream (a plugin may change it)
    bool expect_continue = false;
    bool has_body = false;  // the request carries a body
    uint64_t body_length = 0;
    bool body_chunked = false;
    ClientInfo client;
    const snapshot::Route* route = nullptr;
    const upstream::Upstream* up_conf = nullptr;
    // The route's timeouts, or those of the upstream a plugin chose.
    upstream::Timeouts timeouts;
    bool plugins = false;  // this request runs plugin chains
    uint64_t plugin_wait = 0;
    // Where the request phases stand with the consumer's plugins (exchange_plugins.cc).
    ConsumerStage consumer_stage = ConsumerStage::kRouteRewrite;
    // Tries.
    int node = -1;
    uint64_t tried = 0;  // bit per node already tried
    int tries_left = 0;
    uint64_t first_try_ms = 0;
    bool retried_idle = false;
    bool req_written = false;  // a byte of the request went to an upstream
    bool body_taken = false;   // a byte of the request body left the client's buffer
    bool up_piece = false;     // the upstream request holds a body piece not yet written
    bool body_sent = false;    // the whole request went upstream
    uint64_t lb_hash = 0;
    upstream::Balancer* lb = nullptr;
    int lb_node = -1;
    uint64_t lb_generation = 0;
    uint64_t lb_start_ms = 0;
    uint64_t received = 0;  // upstream bytes seen when the read timer was last armed
    // The response.
    bool response_started = false;
    bool chunks_out = false;  // body length unknown to the client: the codec frames it
    bool body_allowed = true;
    bool piece = false;  // a body piece is queued downstream
    bool end_sent = false;
    bool early = false;          // the upstream answered before the request was whole
    bool body_buffered = false;  // the whole body is in body_ (a plugin needs_body)
    // An upgrade: the request asks for one and its route allows it (its Upgrade went up);
    // the upstream switched (a 101 goes to the client); to WebSocket.
    bool upgrade = false;
    bool switching = false;
    bool websocket = false;
    bool grpc = false;  // the upstream's scheme is grpc: HTTP/2 to it, gRPC errors to the client
    // A gRPC response began while the request body still streams: both go on at once.
    bool duplex = false;
    TunnelDrain drain = TunnelDrain::kNone;
    uint64_t tunnel_activity = 0;  // Tunnel::activity() when the idle timer was last armed
    // The access log's (exchange_log.cc).
    int status = 0;         // the status the client got (408: it timed out sending the body)
    uint64_t start_ms = 0;  // the head was complete
    bool logged = false;
  };

  // exchange.cc: routing, local replies, the end.
  void route_request();
  void reply(int status, std::string_view body, bool close);
  Step write_reply();
  Step finish();
  void release_head();
  // Copies the request head out of the downstream's buffer, so the body can be read past it.
  void keep_head();
  Step read_whole_body();
  void end_try(bool reusable);
  // Ends the exchange early (log phase, the try's connection closed); the connection closes.
  void close_early();
  // Whether everything queued for the client has reached its socket. If not, `*step` is what
  // to return meanwhile: kWait, or kClose once the client is gone (close_early has run).
  bool flushed(Step* step);
  void arm(uint32_t ms);
  static void on_timer(void* self);
  void handle_timeout();
  void forget_plugin_wait();
  // exchange_plugins.cc.
  void begin_plugins(const router::MatchContext& m);
  bool run_request_plugins();
  // After the rewrite phase: merges the plugins of the consumer the request authenticated as
  // into its route's chain. False when it answered the request (503: the consumer's group is
  // gone).
  bool merge_consumer();
  // Answers or suspends the request for a hook's verdict; true for kContinue.
  bool plugin_verdict(plugin::Action a);
  void plugin_header_filter(int status, const http::ResponseHead* upstream_head);
  void end_plugins();
  void trace_tries();
  // exchange_upstream.cc: tries, the balancer, the request going up.
  // Sets up_conf and timeouts: the route's, or the upstream a plugin chose (traffic-split).
  // Returns the route's target as the chosen upstream makes it.
  snapshot::RouteTarget choose_upstream();
  bool connect_next();
  bool start_try(int node, bool fresh);
  // `logged`: the failure was reported already (report_failure), with more detail.
  void try_next_or_fail(int status, std::string_view why, bool logged = false);
  void upstream_failed(int status, std::string_view why, bool logged = false);
  // Logs a failure naming the route, the upstream and the node, once per incident.
  void report_failure(std::string_view why);
  bool retry_allowed();
  bool can_send_again() const;
  bool can_retry_idle_failure() const;
  bool retry_idle(const char* why);
  void note_try(int status);
  uint64_t balancer_hash() const;
  int pick_node();
  void node_started(int node);
  void node_finished(bool completed);
  Step send_request();
  Step pump_request_body();
  Step upstream_write_failed(int err);
  Step relay_early_answer();
  // exchange_grpc.cc: a gRPC upstream (scheme grpc).
  // Picks the upstream request's protocol and applies grpc-timeout. False when it answered
  // the request (an HTTP/1.1 client: gRPC needs HTTP/2).
  bool prepare_protocol();
  // The gateway's gRPC answer to a failed request: HTTP 200 with grpc-status and grpc-message
  // in one HEADERS frame (a trailers-only response), as a gRPC client expects.
  void grpc_reply(int http_status, std::string_view why);
  // During a duplex response: passes on what the client sent of the request body since, as
  // the upstream takes it. False when that ended the exchange (the client or upstream gone).
  bool pump_duplex();
  // exchange_tunnel.cc: the upgrade.
  // The request asks to switch protocols in a way its route lets through.
  bool wants_upgrade(const http::RequestHead& req, const http::ConnectionTokens& listed) const;
  Step write_upgrade();
  Step run_tunnel();
  void tunnel_timeout();
  // The tunnel is over, however it ended (close_early then runs the log phase, status 101,
  // and closes both connections): its bytes counted, the balancer told the try completed.
  void drop_tunnel();
  // exchange_log.cc: the access log's line, written once when the request ends.
  void log_request();
  // exchange_head.cc: the request head for the upstream.
  // Describes the request for the upstream (client fields filtered, forwarding fields, the
  // plugins' edits, the body's framing) and has the upstream side prepare its head.
  void build_upstream_head();
  void add_forwarding_fields(const plugin::RequestEdits* ed);
  std::string_view host_for(int node) const;
  // exchange_response.cc: the response head and body.
  Step read_response_head();
  void start_response();
  void filter_upstream_fields(bool pass_length, const plugin::ResponseEdits* ed);
  void add_edited_fields(const plugin::HeaderEdits& edits);
  Step stream_response();
  bool send_piece(std::string_view data);
  // A hook's Action::kReply: the gateway's reply, or the plugin's own response with a body
  // from Context::reply_source, streamed by stream_source.
  void plugin_reply();
  void source_reply();
  Step stream_source();

  Worker& w_;
  std::unique_ptr<proxy::UpstreamRequest> h1_up_;
  std::unique_ptr<proxy::UpstreamRequest> h2_up_;  // made at the first gRPC request
  proxy::UpstreamRequest* up_ = nullptr;           // this request's: one of the two
  Downstream* down_ = nullptr;
  io::Timer timer_{&Exchange::on_timer, this};
  snapshot::SnapshotPtr snap_;
  State st_;

  // Buffers kept across requests for their capacity.
  http::ResponseHead resp_;  // the upstream's response head; views die at start_response
  std::vector<http::Header> req_fields_;  // the fields the upstream gets, until prepare()
  std::string target_;                    // an absolute-form request's path and query
  char port_text_[8];                     // X-Forwarded-Port's digits
  std::string client_host_;               // the client's Host (or a plugin's), kept past the head
  std::string xff_;                       // incoming X-Forwarded-For values, joined
  std::string up_statuses_;               // each try's status, "502, 504, 200" ($upstream_status)
  std::string reply_body_;                // a gateway-made response's body
  std::string grpc_message_;              // a gateway-made gRPC answer's grpc-message
  http::RequestHead head_copy_;           // keep_head(): the head, its views into head_bytes_
  std::string head_bytes_;
  std::string body_;                           // the whole request body, when a plugin needs it
  std::vector<http::Header> upstream_fields_;  // the response's forwarded fields
  std::vector<http::Header> fields_;           // the gateway's and plugins' fields
  plugin::Context pctx_;
  plugin::Chains chains_;
  // For the access log: the head's values it prints, and the upstream tries.
  accesslog::Captured log_head_;
  accesslog::Tries tries_;
  // The route's chain merged with the consumer's, while chains_.route points at it.
  std::shared_ptr<const plugin::Chain> merged_;
  // An upgraded request's tunnel; made per upgrade, null otherwise.
  std::unique_ptr<proxy::Tunnel> tunnel_;
};

// How long before the drain deadline a tunnel gets its Close frames (at most half the drain
// time): long enough for the frame in flight to finish and for both Close frames to go out.
inline constexpr uint32_t kTunnelCloseLeadMs = 1000;

}  // namespace sluice::server
