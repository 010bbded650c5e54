#pragma once
// The client side of an exchange, as the exchange sees it: a connection's codec (HTTP/1.1
// today, ClientConn; an HTTP/2 stream later implements the same). The request head is handed
// over complete; its body is pulled piece by piece with the framing removed; the response goes
// out as a head, data pieces and an end, and the codec frames it.

#include <cstdint>
#include <span>
#include <string_view>

#include "http/message.h"
#include "proxy/tunnel.h"

namespace sluice::server {

// A response head in protocol-neutral terms; the codec adds the framing and connection fields.
// Thread: worker
struct ResponseStart {
  int status = 200;
  std::string_view reason;  // empty: the standard phrase for `status`
  // The upstream's end-to-end fields, already filtered (empty for the gateway's own answers),
  // then the gateway's and the plugins' fields.
  std::span<const http::Header> upstream_fields;
  std::span<const http::Header> fields;
  // >= 0: the body's exact length. -1: not known ahead (HTTP/1.1 sends chunks, HTTP/1.0
  // closes), or not sent because no body follows.
  int64_t content_length = -1;
  bool bodiless = false;      // no body follows (HEAD, 1xx, 204, 304)
  bool gateway_made = false;  // the gateway's own answer (a 404, a plugin's 503, a 502)
  bool close = false;         // the connection must close after this response
  // A 101 Switching Protocols: the protocol the connection switches to (the upstream's
  // Upgrade value), which the codec announces with its connection fields.
  std::string_view upgrade;
};

// Thread: worker
class Downstream {
 public:
  enum class Body : uint8_t {
    kData,    // a piece of the request body
    kWait,    // more will come; the exchange is driven again
    kEnd,     // the body is complete
    kBad,     // broken framing (a bad chunk)
    kClosed,  // the client went away before the body's end
  };
  enum class Flush : uint8_t {
    kDone,    // everything queued reached the socket
    kWait,    // the socket is full or a write is queued; the exchange is driven again
    kClosed,  // the client is gone
  };

  virtual ~Downstream() = default;

  // The bytes the request head was parsed from (the head's views point into them).
  virtual std::string_view request_head() const = 0;
  // The exchange is done with the request head's views: its bytes may go.
  virtual void release_head() = 0;
  // The request body, framing removed; the piece stays valid until consume_body().
  virtual Body read_body(std::string_view* piece) = 0;
  virtual void consume_body() = 0;
  // The whole request body has been read (or there is none).
  virtual bool body_done() const = 0;
  // Sends "100 Continue" when the client asked for it and has not started its body.
  virtual void send_continue() = 0;

  virtual void send_head(const ResponseStart& r) = 0;
  // Queues a piece of the body; `data` must stay valid until flush() says kDone.
  virtual void send_data(std::string_view data) = 0;
  virtual void send_end() = 0;
  // Trailers to end the response with, before send_end (the views stay valid until flush()
  // says kDone). HTTP/2 sends them as a last HEADERS frame; HTTP/1.1 has no use for them here.
  virtual void send_trailers(std::span<const http::Header> fields) { (void)fields; }
  virtual Flush flush() = 0;
  // Bytes of the response head as sent (for the log phase's byte counts).
  virtual uint64_t head_bytes() const = 0;
  // Bytes of the response body queued for the client since its head, framing included (nginx's
  // $body_bytes_sent), and of the request read so far, head and body as they came
  // ($request_length). For the access log.
  virtual uint64_t body_bytes() const = 0;
  virtual uint64_t request_bytes() const = 0;

  // Drives the connection (and so its exchange) from outside its own events: an upstream
  // event, an exchange timer, a plugin's answer.
  virtual void wake() = 0;

  // After a 101 went out whole: the connection's byte stream, for a tunnel, with the bytes
  // the client sent past its request (they go first). The connection serves no other request
  // afterwards. A null stream where the protocol has none to give (an HTTP/2 stream).
  virtual proxy::TunnelEnd upgrade() = 0;
};

}  // namespace sluice::server
