#pragma once
// One HTTP/1.1 connection to an etcd member's JSON gateway, plain or TLS, with blocking calls
// bounded by a deadline. Every wait also watches a cancel descriptor (an eventfd the owner
// signals to stop), so a thread parked in a watch read wakes at once on shutdown. Used only
// off the workers: by the control thread for Admin API writes and by the watch thread.

#include <netdb.h>
#include <openssl/ssl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "codec/h1/chunked.h"
#include "common/status.h"
#include "config/gateway_config.h"
#include "etcd/endpoint.h"

namespace sluice::etcd {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// The OpenSSL error queue's first entry as text (the queue is cleared), or "TLS error".
std::string ssl_error_text();

// Waits for `events` on fd, or for the cancel descriptor (-1: none), until the deadline; an
// error names `url` ("cancelled: ...", "timeout: ...").
common::Status poll_fd(int fd, short events, int cancel_fd, Deadline deadline,
                       const std::string& url);

// The client TLS context built from deployment.etcd.tls; shared by every connection.
// Thread: any after create (OpenSSL contexts are safe to share once configured)
class TlsContext {
 public:
  static common::StatusOr<std::shared_ptr<TlsContext>> create(const config::EtcdTls& tls);
  ~TlsContext();
  SSL_CTX* get() const { return ctx_; }
  const config::EtcdTls& settings() const { return tls_; }

 private:
  TlsContext(SSL_CTX* ctx, config::EtcdTls tls) : ctx_(ctx), tls_(std::move(tls)) {}
  SSL_CTX* ctx_;
  config::EtcdTls tls_;
};

// The addresses of a member, freed with freeaddrinfo.
using AddrList = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;
// getaddrinfo's signature, for resolve_host's tests.
using Resolver =
    std::function<int(const char* host, const char* port, const addrinfo* hints, addrinfo** out)>;

// The addresses of `ep.host` for a stream connection. A name is looked up on a thread of its
// own, so the caller is bound by `deadline` and `cancel_fd` even when the resolver is not
// (glibc's waits 5 s per nameserver and attempt); a lookup given up on finishes in the
// background and frees what it found; at most 8 may be in flight. IP addresses are converted
// in place.
common::StatusOr<AddrList> resolve_host(const Endpoint& ep, Deadline deadline, int cancel_fd,
                                        const Resolver& resolver = getaddrinfo);

// Thread: one owner at a time
class Conn {
 public:
  struct Response {
    int status = 0;
    std::string body;
  };

  // Connects (and completes the TLS handshake for https). `tls` may be null for http.
  static common::StatusOr<std::unique_ptr<Conn>> open(const Endpoint& ep, const TlsContext* tls,
                                                      Deadline deadline, int cancel_fd);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Sends `POST path` with a JSON body; `token` (etcd's auth token) goes in Authorization.
  common::Status post(std::string_view path, std::string_view body, std::string_view token,
                      Deadline deadline);
  // Reads one whole response (Content-Length or chunked body).
  common::StatusOr<Response> read_response(Deadline deadline);
  // Streaming: reads the head only, returning the status.
  common::StatusOr<int> read_stream_head(Deadline deadline);
  // Streaming: appends the next decoded body bytes to `out`, waiting until some arrive.
  // An error when the stream ends, breaks, or the deadline passes (message starts "timeout").
  common::Status read_stream(std::string* out, Deadline deadline);
  // True when the last response left the connection fit for another request.
  bool reusable() const { return reusable_; }
  // True when an idle connection has something to read: the member closed it (or broke it).
  bool idle_broken() const;
  // True when any byte of the current response has arrived.
  bool got_bytes() const { return got_bytes_; }
  const Endpoint& endpoint() const { return ep_; }

 private:
  Conn(Endpoint ep, int fd, int cancel_fd) : ep_(std::move(ep)), fd_(fd), cancel_fd_(cancel_fd) {}
  common::Status wait(short events, Deadline deadline);
  common::Status handshake(const TlsContext& tls, Deadline deadline);
  common::Status write_all(std::string_view data, Deadline deadline);
  // Appends what the socket has to in_, waiting up to the deadline; error on EOF.
  common::Status fill(Deadline deadline);
  common::Status parse_head(Deadline deadline);
  // Moves decoded body bytes from in_ to *out (chunked or length). Sets body_done_.
  common::Status take_body(std::string* out);
  common::Status fail(std::string_view what) const;

  Endpoint ep_;
  int fd_ = -1;
  int cancel_fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string in_;  // received bytes not yet consumed
  int status_ = 0;
  bool chunked_ = false;
  bool until_close_ = false;
  uint64_t remaining_ = 0;  // Content-Length bytes still to come
  bool body_done_ = false;
  bool reusable_ = false;
  bool got_bytes_ = false;
  h1::ChunkedDecoder chunk_;
};

}  // namespace sluice::etcd
