// The etcd client's TLS context (deployment.etcd.tls) and the OpenSSL error text its errors
// carry.

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "etcd/conn.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;

std::string ssl_error_text() {
  unsigned long e = ERR_get_error();
  if (e == 0) {
    return "TLS error";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::create(const config::EtcdTls& tls) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return Status::error("etcd TLS: " + ssl_error_text());
  }
  std::shared_ptr<TlsContext> out(new TlsContext(ctx, tls));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (tls.verify) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    int ok = tls.trusted_ca.empty()
                 ? SSL_CTX_set_default_verify_paths(ctx)
                 : SSL_CTX_load_verify_locations(ctx, tls.trusted_ca.c_str(), nullptr);
    if (ok != 1) {
      return Status::error(fmt::format("etcd TLS: cannot load the trusted CA {}: {}",
                                       tls.trusted_ca.empty() ? "(system default)" : tls.trusted_ca,
                                       ssl_error_text()));
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  // A key with a passphrase fails to load instead of prompting on the terminal.
  SSL_CTX_set_default_passwd_cb(ctx, [](char*, int, int, void*) { return 0; });
  if (!tls.cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert.c_str()) != 1) {
      return Status::error(fmt::format("etcd TLS: cannot load the client certificate {}: {}",
                                       tls.cert, ssl_error_text()));
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      return Status::error(
          fmt::format("etcd TLS: cannot load the client key {}: {}", tls.key, ssl_error_text()));
    }
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace sluice::etcd
