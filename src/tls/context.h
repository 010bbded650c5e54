#pragma once
// OpenSSL contexts. A ServerContext is the TLS side of the HTTPS listeners: one SSL_CTX shared
// by every worker (so the session cache and the ticket keys are shared too), whose certificate
// is chosen per handshake, in the ClientHello callback, from the worker's current CertIndex.
// A ClientContext is what upstream connections are made with: verification, a client
// certificate, and a session cache per (server name, certificate) for resumption.

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "tls/cert_index.h"

namespace sluice::tls {

// What a handshake asks of the connection it belongs to. Set as the SSL's app data by the
// transport.
// Thread: worker
class HandshakeHost {
 public:
  virtual ~HandshakeHost() = default;
  // The certificates of the snapshot the worker serves now; null: none.
  virtual const CertIndex* certs() const = 0;
  // The object chosen for this connection (kept for per-request mTLS checks).
  virtual void chose(const CertEntryPtr& e, std::string_view sni) = 0;
};

// Thread: any (immutable after create; OpenSSL locks its own session cache)
class ServerContext {
 public:
  struct Options {
    std::vector<std::string> protocols = {"TLSv1.2", "TLSv1.3"};
    std::string ciphers;
    bool session_tickets = false;
    std::string fallback_sni;
    uint32_t session_timeout_s = 600;  // APISIX's ssl_session_timeout 10m
    // A fixed certificate instead of the CertIndex (the Admin API's https listener).
    std::string cert_file, key_file, client_ca_file;
    // ALPN offers h2 (preferred) besides http/1.1: the listener serves HTTP/2.
    bool alpn_h2 = false;
  };

  ~ServerContext();
  static common::StatusOr<std::shared_ptr<ServerContext>> create(const Options& o);
  // A server-side SSL for one accepted connection; `host` answers its ClientHello.
  SSL* new_ssl(HandshakeHost* host) const;
  // Rotates the session ticket keys when their hour is up (called at a handshake; cheap).
  const Options& options() const { return opts_; }

 private:
  ServerContext() = default;
  static int on_client_hello(SSL* ssl, int* alert, void* arg);

  SSL_CTX* ctx_ = nullptr;
  Options opts_;
  bool fixed_cert_ = false;
};

// The SNI a ClientHello names (RFC 6066 server_name, host_name type), or empty. `ext` is the
// extension's body. Hostile input: every length is checked.
std::string_view parse_server_name(const unsigned char* ext, size_t len);

// One verification/client-certificate setting for upstream connections (every upstream with
// the same settings shares one). It keeps the last session of each peer for resumption.
// Thread: any (OpenSSL locks its own structures; the session map has its own lock)
class ClientContext {
 public:
  struct Options {
    bool verify = false;              // check the server's certificate and name
    std::string ca_file;              // empty: the system's CA store
    std::vector<std::string> ca_pem;  // CA certificates (PEM); when set, instead of ca_file
    CertEntryPtr client;              // a client certificate to present, or null
    // Sessions kept at most; the oldest goes when a new peer would exceed it (names come from
    // client Host headers under pass_host: pass, so the map must not grow without bound).
    size_t max_sessions = 4096;
  };

  ~ClientContext();
  static common::StatusOr<std::shared_ptr<ClientContext>> create(const Options& o);
  // A client SSL for a connection to `name`: the upstream's host name, or an IP literal (with
  // or without brackets; empty: no name). A name is sent as SNI, an IP address is not (RFC
  // 6066); with verify on, the certificate must match it (a DNS name, or the IP address).
  // The session kept under `session_key` (when there is one) is offered for resumption.
  SSL* new_ssl(std::string_view name, std::string_view session_key) const;
  // Keeps the session of a finished handshake under `session_key` for the next connection.
  // False when it is not resumable yet (TLS 1.3: no ticket has arrived).
  bool keep_session(std::string_view session_key, SSL* ssl) const;
  bool verify() const { return opts_.verify; }
  const Options& options() const { return opts_; }
  size_t session_count() const;

 private:
  ClientContext() = default;
  SSL_CTX* ctx_ = nullptr;
  Options opts_;
  mutable std::mutex mu_;
  struct Kept {
    SSL_SESSION* session;
    uint64_t order;  // when it was kept: the smallest goes first
  };
  mutable std::unordered_map<std::string, Kept> sessions_;
  mutable uint64_t kept_ = 0;
};

// Whether `host` is an IPv4 or IPv6 literal (IPv6 with or without brackets).
bool is_ip_literal(std::string_view host);

// OpenSSL's last error as text, and the queue cleared.
std::string last_error();

}  // namespace sluice::tls
