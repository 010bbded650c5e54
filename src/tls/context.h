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

// One verification/client-certificate setting for upstream connections.
// Thread: any (OpenSSL locks its own structures)
class ClientContext {
 public:
  struct Options {
    bool verify = false;  // check the server's certificate and name
    std::string ca_file;  // empty: the system's CA store
    CertEntryPtr client;  // a client certificate to present, or null
  };
  ~ClientContext();
  static common::StatusOr<std::shared_ptr<ClientContext>> create(const Options& o);
  // A client SSL for `sni` (empty: no SNI, no name check), resuming a session kept from an
  // earlier connection to the same name when there is one.
  SSL* new_ssl(std::string_view sni) const;
  // Keeps the session of a finished handshake for the next connection to `sni`.
  void keep_session(std::string_view sni, SSL* ssl) const;
  bool verify() const { return opts_.verify; }

 private:
  ClientContext() = default;
  SSL_CTX* ctx_ = nullptr;
  Options opts_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, SSL_SESSION*> sessions_;
};

// OpenSSL's last error as text, and the queue cleared.
std::string last_error();

}  // namespace sluice::tls
