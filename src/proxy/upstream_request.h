#pragma once
// One request to an upstream node, as an exchange drives it: the client side of a protocol
// (HTTP/1.1, H1UpstreamRequest; HTTP/2 for gRPC upstreams, H2UpstreamRequest) over a
// connection taken from the worker's keep-alive pool or newly made. The exchange queues the
// request's bytes and pulls the response's head and body pieces; framing, connection reuse
// and the connection's readiness are this side's.
// Tests drive exchanges with a scripted fake instead (tests/unit/server/).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "http/message.h"
#include "io/socket.h"
#include "proxy/tunnel.h"
#include "tls/context.h"

namespace sluice::proxy {

// Whoever currently drives a busy upstream request: told when its connection has news.
// Thread: worker
class UpstreamOwner {
 public:
  virtual ~UpstreamOwner() = default;
  virtual void on_upstream_event() = 0;
};

// A request for the upstream in protocol-neutral terms, built once per request. The views need
// stay valid only until prepare() returns: the codec renders (or encodes) what it needs then.
// Thread: worker
struct RequestStart {
  enum class Body : uint8_t {
    kNone,     // no body
    kEmpty,    // no body, but the client said Content-Length: 0 (kept explicit)
    kLength,   // `length` bytes
    kChunked,  // a length not known ahead
  };
  std::string_view method;
  std::string_view target;               // path and query as sent upstream
  std::span<const http::Header> fields;  // end-to-end fields in order (no Host, no framing)
  Body body = Body::kNone;
  uint64_t length = 0;
  // The request asks to switch protocols (its Upgrade field is among `fields`): a 101 is
  // then a valid answer, and any other is not.
  bool upgrade = false;
};

// Where one try goes, and how its connection may be kept afterwards.
struct Target {
  const io::SockAddr* addr = nullptr;
  const std::string* key = nullptr;  // "ip:port": the pool's key and the logs' name
  std::string_view host;             // the Host this try sends (pass_host); empty: none
  uint32_t pool_size = 0;            // idle connections kept per node (keepalive_pool.size)
  uint32_t pool_idle_ms = 0;         // how long one stays idle (keepalive_pool.idle_timeout)
  uint32_t pool_requests = 0;        // requests one may carry (keepalive_pool.requests)
  // scheme https: the upstream's TLS settings; null: plaintext. The server name (SNI, and the
  // name verified) is `host` without its port, as nginx's proxy_ssl_name $upstream_host.
  const std::shared_ptr<const tls::ClientContext>* tls = nullptr;
};

// Thread: worker
class UpstreamRequest {
 public:
  enum class Send : uint8_t {
    kDone,           // everything queued was written
    kWait,           // connecting, a full socket or a queued write: the owner is driven again
    kConnectFailed,  // the connection could not be made (err says why)
    kWriteFailed,    // the connection broke while writing (err says why)
  };
  enum class Head : uint8_t {
    kHead,    // a final response head was parsed (1xx interim ones are skipped), or the 101
              // that answers an upgrade
    kWait,    // more bytes are needed
    kClosed,  // the connection closed or reset before a complete head
    kBad,     // a malformed head (error() says why)
  };
  enum class Body : uint8_t {
    kData,  // a piece of the body (framing removed)
    kWait,  // more bytes are needed
    kEnd,   // the body is complete
    kCut,   // the connection closed or reset before the body's end
    kBad,   // broken framing
  };

  virtual ~UpstreamRequest() = default;

  // The request's head, once per request before the first try.
  virtual void prepare(const RequestStart& r) = 0;
  // Starts a try: a pooled connection to `t` unless `fresh`, else a new one, with the prepared
  // head queued (and t.host as its Host). False when a new connection failed at once (*err
  // set). Queued bytes of an earlier try are dropped.
  virtual bool open(const Target& t, bool fresh, UpstreamOwner* owner, int* err) = 0;
  // The try runs on a connection taken from the pool.
  virtual bool reused() const = 0;
  // The connection's handshake (TCP, and TLS on an https upstream) finished: a failure after it
  // is not a connect failure.
  virtual bool connected() const = 0;
  // Queues a piece of the request body (framed as a chunk when `chunked`), or its end; the
  // piece must stay valid until send() has written it.
  virtual void add_body(std::string_view piece, bool chunked) = 0;
  virtual void add_body_end(bool chunked) = 0;
  virtual bool queued() const = 0;
  // Completes the connect, then writes what is queued.
  virtual Send send(int* err) = 0;
  // Looks, without waiting, whether the upstream already sent bytes or closed while the
  // request was still being written: it may have answered early (a 413, a 401), and that
  // answer should reach the client rather than wait for a body that may never come.
  virtual bool answered_early() = 0;
  // Bytes of a response are already read and waiting.
  virtual bool has_input() const = 0;
  // Reads and parses the response head for a request made with `method`.
  virtual Head read_head(http::Method method, http::ResponseHead* head) = 0;
  virtual std::string_view error() const = 0;
  // The next piece of the body; valid until consume().
  virtual Body read_body(std::string_view* piece) = 0;
  // Drops the last piece read_body() gave, once it has been written downstream.
  virtual void consume() = 0;
  // After read_body() said kEnd: the response's trailers (HTTP/2; gRPC's grpc-status), valid
  // until the try is released. HTTP/1.1 passes none on.
  virtual std::span<const http::Header> trailers() const { return {}; }
  // The response ended cleanly and nothing followed it: the connection may serve again.
  virtual bool reusable() const = 0;
  // Ends the try: the connection goes back to the pool when `reusable` and still sound,
  // else it is closed. Safe to call when no try is open.
  virtual void release(bool reusable) = 0;
  // A byte of this try's request reached the connection.
  virtual bool written() const = 0;
  // Bytes read from the connection so far (a read timeout counts from the last of them).
  virtual uint64_t received() const = 0;
  // After a 101 head (read_head): the connection's byte stream for a tunnel, with the bytes
  // that followed the head. The connection is never pooled again; release() closes it.
  virtual TunnelEnd upgrade() = 0;
};

}  // namespace sluice::proxy
