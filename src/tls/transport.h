#pragma once
// TLS over a SocketTransport. OpenSSL never touches the socket: its BIO reads ciphertext from
// a buffer this transport filled through the socket transport (so reads and writes are still
// batched on the loop's io_uring ring) and writes ciphertext into a buffer this transport
// sends. The codec above sees plaintext through the same io::Transport calls as on a plain
// connection. Buffers are taken when bytes move and given back when the connection is idle,
// and OpenSSL releases its own (SSL_MODE_RELEASE_BUFFERS), so an idle TLS connection holds
// little more than its SSL session.

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "http/tls_info.h"
#include "io/buffer.h"
#include "io/outbox.h"
#include "io/transport.h"
#include "tls/context.h"

namespace sluice::tls {

// Thread: worker
class TlsTransport final : public io::Transport, public HandshakeHost {
 public:
  // Server side: an accepted connection whose certificate `certs` chooses (see HandshakeHost).
  // Client side (`ssl` from ClientContext::new_ssl): an upstream connection.
  TlsTransport(io::SocketTransport& sock, SSL* ssl);
  ~TlsTransport() override;
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  void on_events(uint32_t events) override { sock_.on_events(events); }
  Read read(io::Buffer& b, size_t max_buffer) override;
  io::Outbox::Result write(io::Outbox& out, int* err) override;
  void shutdown_write() override;
  bool cancel_read() override;
  bool read_pending() const override { return sock_.read_pending(); }
  bool readable() const override;
  bool writable() const override { return sock_.writable(); }
  bool failed() const override { return failed_ || sock_.failed(); }

  // Where certificates come from on the server side (the worker's snapshot); unset on the
  // client side.
  void set_cert_source(const CertIndex* (*fn)(void*), void* arg) {
    certs_fn_ = fn;
    certs_arg_ = arg;
  }
  const CertIndex* certs() const override { return certs_fn_ ? certs_fn_(certs_arg_) : nullptr; }
  void chose(const CertEntryPtr& e, std::string_view sni) override;

  bool handshake_done() const { return done_; }
  // The session as the ssl_* variables show it; complete once handshake_done().
  const http::TlsInfo& info() const { return info_; }
  // The `ssls` object the server side chose; null on the client side.
  const CertEntryPtr& cert() const { return cert_; }
  SSL* ssl() const { return ssl_; }
  // Why the handshake or a read failed (for the log), or empty.
  const std::string& error() const { return error_; }
  // Gives back the buffers of an idle connection (nothing buffered, nothing in flight).
  void release_buffers();
  // The connection is about to close: sends close_notify when it can go at once, so the
  // peer can tell a complete response from a cut one, and keeps the session resumable
  // (OpenSSL drops a session whose connection ended without a shutdown).
  void close_notify();

 private:
  friend struct BioMethods;
  enum class Pump { kProgress, kWait, kEof };

  // Reads ciphertext from the socket into in_.
  Pump fill();
  // Sends out_: kDone when all of it left.
  io::Outbox::Result flush(int* err);
  // After a failed SSL call: what the codec should see.
  Pump on_ssl_error(int ret, bool* want_write);
  void finish_handshake();
  void send_alert();
  // BIO callbacks.
  int bio_read(char* dst, int len);
  int bio_write(const char* src, int len);

  io::SocketTransport& sock_;
  SSL* ssl_;
  BIO* bio_;
  io::Buffer in_;          // ciphertext read, not yet decrypted
  io::Buffer out_;         // ciphertext made, not yet sent
  io::Outbox box_;         // out_ as handed to the socket
  bool out_busy_ = false;  // box_ holds out_'s bytes: out_ must not move
  bool done_ = false;      // handshake finished
  bool eof_ = false;
  bool failed_ = false;
  const CertIndex* (*certs_fn_)(void*) = nullptr;
  void* certs_arg_ = nullptr;
  CertEntryPtr cert_;
  http::TlsInfo info_;
  std::string sni_, verify_, s_dn_, i_dn_, serial_;
  std::string error_;
};

}  // namespace sluice::tls
