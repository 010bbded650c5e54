// The per-request checks a TLS connection adds (APISIX's verify_https_client), for HTTP/1.1
// requests and HTTP/2 streams alike, and whether a request goes to the Admin API.

#include "common/log.h"
#include "common/strings.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

// APISIX's verify_https_client: the object the request's Host names decides. When it verifies
// clients, the connection must have a verified certificate (or the path an exemption) and
// its SNI must be that Host, so neither another object's SNI nor a wildcard sibling's
// verification lets a client past it.
bool ClientConn::admin_request(const http::RequestHead& req) const {
  return admin_port_ || (w_.settings().admin && is_admin_path(req.path));
}

bool ClientConn::tls_client_ok(const http::RequestHead& req) {
  const tls::CertIndex* certs = w_.certs();
  if (!tls_) {
    return true;
  }
  if (certs == nullptr || !certs->any_client_verification()) {
    return true;  // the common case: one flag read
  }
  const http::TlsInfo& t = tls_->info();
  // Paths are matched as routes see them ($uri: decoded, dot segments resolved), never raw.
  std::string_view path = req.uri;
  // The handshake's own object first: one that deferred its check to the request (a
  // skip_mtls_uri_regex) lets a client in without a certificate, so no Host may lift that.
  if (const tls::CertEntryPtr& by_sni = tls_->cert(); by_sni && by_sni->verify_per_request() &&
                                                      t.client_verify != "SUCCESS" &&
                                                      !by_sni->skips_mtls(path)) {
    SLUICE_LOG(kError, "client {}: client certificate {}", peer_ip_,
               t.client_verify == "NONE"
                   ? std::string("was not present")
                   : "verification is not passed: " + std::string(t.client_verify));
    return false;
  }
  std::string_view host = req.host;
  if (size_t colon = host.rfind(':'); colon != std::string_view::npos && !host.starts_with('[')) {
    host = host.substr(0, colon);  // the port
  }
  if (!host.empty() && host.back() == '.') {
    host.remove_suffix(1);  // nginx's $host drops it
  }
  const tls::CertEntryPtr* by_host = certs->find(host);
  if (by_host == nullptr || !(*by_host)->verifies_clients()) {
    return true;
  }
  if (t.client_verify != "SUCCESS" || tls_->cert() != *by_host) {
    if ((*by_host)->verify_per_request() && (*by_host)->skips_mtls(path)) {
      return true;
    }
    if (t.client_verify == "NONE") {
      SLUICE_LOG(kError, "client {}: client certificate was not present", peer_ip_);
      return false;
    }
    if (t.client_verify != "SUCCESS") {
      SLUICE_LOG(kError, "client {}: client certificate verification is not passed: {}", peer_ip_,
                 t.client_verify);
      return false;
    }
  }
  if (host.size() == t.server_name.size() &&
      std::equal(host.begin(), host.end(), t.server_name.begin(),
                 [](char a, char b) { return common::ascii_lower(a) == common::ascii_lower(b); })) {
    return true;
  }
  SLUICE_LOG(kError, "client {}: client certificate verified with SNI {}, but the host is {}",
             peer_ip_, t.server_name, host);
  return false;
}

}  // namespace sluice::server
