#include "tls/context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/tls1.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/log.h"

namespace sluice::tls {

using common::Status;
using common::StatusOr;

std::string last_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown error";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

std::string_view parse_server_name(const unsigned char* p, size_t len) {
  // ServerNameList: u16 length, then entries of (u8 type, u16 length, name).
  if (len < 2) {
    return {};
  }
  size_t list = (size_t{p[0]} << 8) | p[1];
  if (list + 2 != len) {
    return {};
  }
  size_t at = 2;
  while (at + 3 <= len) {
    unsigned type = p[at];
    size_t n = (size_t{p[at + 1]} << 8) | p[at + 2];
    at += 3;
    if (n > len - at) {
      return {};
    }
    if (type == 0) {  // host_name
      std::string_view name(reinterpret_cast<const char*>(p + at), n);
      if (name.empty() || name.size() > 255 || name.find('\0') != std::string_view::npos) {
        return {};
      }
      return name;
    }
    at += n;
  }
  return {};
}

namespace {

// A client's SNI for the log: its bytes are the client's, so anything but visible ASCII is
// shown as '?' (no line breaks or escape sequences reach the log).
std::string printable(std::string_view sni) {
  std::string out(sni);
  for (char& c : out) {
    if (c < 0x21 || c > 0x7e) {
      c = '?';
    }
  }
  return out;
}

// Session ticket keys: random, shared by every worker (one SSL_CTX), replaced every hour; a
// ticket made with the previous key is still accepted (and renewed) for one more hour.
class TicketKeys {
 public:
  struct Key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
  };

  // The key to encrypt with, and whether `name` (decrypting) is known: 1 current, 2 renew.
  bool current(Key* out) {
    std::lock_guard lock(mu_);
    rotate();
    *out = keys_[0];
    return true;
  }
  int find(const unsigned char* name, Key* out) {
    std::lock_guard lock(mu_);
    rotate();
    for (int i = 0; i < n_; ++i) {
      if (std::memcmp(keys_[i].name, name, 16) == 0) {
        *out = keys_[i];
        return i == 0 ? 1 : 2;
      }
    }
    return 0;
  }

 private:
  void rotate() {
    auto now = std::chrono::steady_clock::now();
    if (n_ > 0 && now - made_ < std::chrono::hours(1)) {
      return;
    }
    keys_[1] = keys_[0];
    n_ = n_ == 0 ? 1 : 2;
    RAND_bytes(reinterpret_cast<unsigned char*>(&keys_[0]), sizeof(Key));
    made_ = now;
  }

  std::mutex mu_;
  Key keys_[2];
  int n_ = 0;
  std::chrono::steady_clock::time_point made_;
};

TicketKeys& ticket_keys() {
  static auto* k = new TicketKeys();
  return *k;
}

int on_ticket_key(SSL*, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cctx,
                  EVP_MAC_CTX* hctx, int enc) {
  TicketKeys::Key k;
  int r = 1;
  if (enc == 1) {
    ticket_keys().current(&k);
    std::memcpy(name, k.name, 16);
    if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1) {
      return -1;
    }
  } else {
    r = ticket_keys().find(name, &k);
    if (r == 0) {
      return 0;  // unknown key: a full handshake
    }
  }
  if (EVP_CipherInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes, iv, enc) != 1) {
    return -1;
  }
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string("key", k.hmac, sizeof(k.hmac)),
      OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>("sha256"), 0),
      OSSL_PARAM_construct_end(),
  };
  if (EVP_MAC_CTX_set_params(hctx, params) != 1) {
    return -1;
  }
  return r;
}

int proto_version(std::string_view name) {
  if (name == "TLSv1.1") {
    return TLS1_1_VERSION;
  }
  return name == "TLSv1.2" ? TLS1_2_VERSION : TLS1_3_VERSION;
}

const unsigned char kSessionIdContext[] = "sluice";

// Finds `proto` in a ClientHello's ALPN list (hostile input: every length is checked).
bool offered(const unsigned char* in, unsigned int inlen, std::string_view proto,
             const unsigned char** out, unsigned char* outlen) {
  unsigned int at = 0;
  while (at < inlen) {
    unsigned int n = in[at];
    if (n > inlen - at - 1) {
      break;
    }
    if (n == proto.size() && std::memcmp(in + at + 1, proto.data(), n) == 0) {
      *out = in + at + 1;
      *outlen = static_cast<unsigned char>(n);
      return true;
    }
    at += 1 + n;
  }
  return false;
}

// ALPN: HTTP/1.1 is what is served; a client offering only h2 gets no ALPN answer and may
// fall back or give up (RFC 7301 lets the server ignore the extension).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  return offered(in, inlen, "http/1.1", out, outlen) ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
}

// An enable_http2 listener: h2 when the client offers it (the server's preference), else
// http/1.1.
int select_alpn_h2(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                   unsigned int inlen, void*) {
  return offered(in, inlen, "h2", out, outlen) || offered(in, inlen, "http/1.1", out, outlen)
             ? SSL_TLSEXT_ERR_OK
             : SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

ServerContext::~ServerContext() { SSL_CTX_free(ctx_); }

StatusOr<std::shared_ptr<ServerContext>> ServerContext::create(const Options& o) {
  std::shared_ptr<ServerContext> c(new ServerContext());
  c->opts_ = o;
  c->ctx_ = SSL_CTX_new(TLS_server_method());
  if (c->ctx_ == nullptr) {
    return Status::error("SSL_CTX_new: " + last_error());
  }
  SSL_CTX* ctx = c->ctx_;
  int lo = TLS1_3_VERSION, hi = TLS1_1_VERSION;
  for (const std::string& p : o.protocols) {
    lo = std::min(lo, proto_version(p));
    hi = std::max(hi, proto_version(p));
  }
  SSL_CTX_set_min_proto_version(ctx, lo);
  SSL_CTX_set_max_proto_version(ctx, hi);
  if (lo < TLS1_2_VERSION) {
    SSL_CTX_set_security_level(ctx, 0);
  }
  if (!o.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, o.ciphers.c_str()) != 1) {
    return Status::error("ssl_ciphers \"" + o.ciphers + "\": " + last_error());
  }
  SSL_CTX_set_options(
      ctx, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_dh_auto(ctx, 1);
  SSL_CTX_set_alpn_select_cb(ctx, o.alpn_h2 ? select_alpn_h2 : select_alpn, nullptr);
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof(kSessionIdContext) - 1);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(ctx, 80 * 1024);  // about APISIX's 20 MiB shared cache
  SSL_CTX_set_timeout(ctx, o.session_timeout_s);
  if (o.session_tickets) {
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket_key);
  } else {
    // TLS 1.3 then hands out stateful tickets: ids into the session cache above.
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  }
  if (!o.cert_file.empty()) {
    c->fixed_cert_ = true;
    if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1) {
      return Status::error(o.cert_file + ": " + last_error());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return Status::error(o.key_file + ": " + last_error());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return Status::error(o.key_file + ": the key is not the certificate's");
    }
    if (!o.client_ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, o.client_ca_file.c_str(), nullptr) != 1) {
        return Status::error(o.client_ca_file + ": " + last_error());
      }
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.client_ca_file.c_str());
      SSL_CTX_set_client_CA_list(ctx, names);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  } else {
    SSL_CTX_set_client_hello_cb(ctx, &ServerContext::on_client_hello, c.get());
  }
  return c;
}

SSL* ServerContext::new_ssl(HandshakeHost* host) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl != nullptr) {
    SSL_set_app_data(ssl, host);
    SSL_set_accept_state(ssl);
  }
  return ssl;
}

int ServerContext::on_client_hello(SSL* ssl, int* alert, void* arg) {
  auto* self = static_cast<ServerContext*>(arg);
  auto* host = static_cast<HandshakeHost*>(SSL_get_app_data(ssl));
  const unsigned char* ext = nullptr;
  size_t ext_len = 0;
  std::string_view sni;
  if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &ext_len) == 1) {
    sni = parse_server_name(ext, ext_len);
  }
  const CertIndex* certs = host != nullptr ? host->certs() : nullptr;
  const CertEntryPtr* e = nullptr;
  if (certs != nullptr) {
    // fallback_sni stands in for a missing SNI only (apisix/ssl.lua server_name()): a name
    // no object covers fails, it does not get the fallback's certificate.
    e = certs->find(sni.empty() ? std::string_view(self->opts_.fallback_sni) : sni);
  }
  if (e == nullptr) {
    if (sni.empty()) {
      SLUICE_LOG(kWarn, "failed to find SNI: the client sent none{}",
                 self->opts_.fallback_sni.empty()
                     ? " and apisix.ssl.fallback_sni is not set"
                     : ", and no ssls object covers fallback_sni " + self->opts_.fallback_sni);
    } else {
      SLUICE_LOG(kWarn, "failed to find any SSL certificate by SNI: {}", printable(sni));
    }
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_CLIENT_HELLO_ERROR;
  }
  if (!(*e)->apply(ssl)) {
    if (!(*e)->broken_reason().empty()) {
      SLUICE_LOG(kWarn, "ssl {} cannot be served ({}): handshake for SNI {} refused", (*e)->id(),
                 (*e)->broken_reason(), printable(sni));
    } else {
      SLUICE_LOG(kError, "ssl {}: failed to set the certificate for SNI {}", (*e)->id(),
                 printable(sni));
    }
    *alert = SSL_AD_INTERNAL_ERROR;
    return SSL_CLIENT_HELLO_ERROR;
  }
  // Without an SNI, the fallback name is the server name (APISIX's server_name()).
  host->chose(*e, sni.empty() ? std::string_view(self->opts_.fallback_sni) : sni);
  return SSL_CLIENT_HELLO_SUCCESS;
}

ClientContext::~ClientContext() {
  for (auto& [key, k] : sessions_) {
    SSL_SESSION_free(k.session);
  }
  SSL_CTX_free(ctx_);
}

bool is_ip_literal(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN) {
    return false;
  }
  char buf[INET6_ADDRSTRLEN];
  std::memcpy(buf, host.data(), host.size());
  buf[host.size()] = '\0';
  unsigned char addr[sizeof(in6_addr)];
  return inet_pton(AF_INET, buf, addr) == 1 || inet_pton(AF_INET6, buf, addr) == 1;
}

namespace {

// Adds PEM CA certificates to the context's trust store: what tls.ca_certs names.
bool add_ca_pems(SSL_CTX* ctx, const std::vector<std::string>& pems, std::string* why) {
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  for (size_t i = 0; i < pems.size(); ++i) {
    BIO* bio = BIO_new_mem_buf(pems[i].data(), static_cast<int>(pems[i].size()));
    int n = 0;
    while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, x);
      X509_free(x);
      ++n;
    }
    BIO_free(bio);
    ERR_clear_error();  // the end of the PEM reads as an error
    if (n == 0) {
      *why = "CA certificate " + std::to_string(i + 1) + " has no certificate";
      return false;
    }
  }
  return true;
}

}  // namespace

StatusOr<std::shared_ptr<ClientContext>> ClientContext::create(const Options& o) {
  std::shared_ptr<ClientContext> c(new ClientContext());
  c->opts_ = o;
  c->ctx_ = SSL_CTX_new(TLS_client_method());
  if (c->ctx_ == nullptr) {
    return Status::error("SSL_CTX_new: " + last_error());
  }
  SSL_CTX* ctx = c->ctx_;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  if (o.verify) {
    std::string why;
    if (!o.ca_pem.empty()) {
      if (!add_ca_pems(ctx, o.ca_pem, &why)) {
        return Status::error("tls.ca_certs: " + why);
      }
    } else {
      int ok = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                 : SSL_CTX_load_verify_locations(ctx, o.ca_file.c_str(), nullptr);
      if (ok != 1) {
        return Status::error("CA bundle " + (o.ca_file.empty() ? "(system)" : o.ca_file) + ": " +
                             last_error());
      }
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (o.client) {
    for (const CertEntry::Pair& p : o.client->pairs()) {
      if (SSL_CTX_use_cert_and_key(ctx, p.cert, p.key, p.chain, 1) != 1) {
        return Status::error("ssl " + o.client->id() + ": " + last_error());
      }
    }
  }
  return c;
}

SSL* ClientContext::new_ssl(std::string_view name, std::string_view session_key) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) {
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  if (name.size() >= 2 && name.front() == '[' && name.back() == ']') {
    name = name.substr(1, name.size() - 2);
  }
  if (!name.empty()) {
    std::string text(name);
    bool ip = is_ip_literal(text);
    // SNI takes a host name only; one longer than the extension holds is left out.
    if (!ip && text.size() <= 255) {
      SSL_set_tlsext_host_name(ssl, text.c_str());
    }
    if (opts_.verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      if (ip) {
        X509_VERIFY_PARAM_set1_ip_asc(param, text.c_str());
      } else {
        SSL_set1_host(ssl, text.c_str());
      }
    }
  }
  if (!session_key.empty()) {
    std::lock_guard lock(mu_);
    auto it = sessions_.find(std::string(session_key));
    if (it != sessions_.end()) {
      SSL_set_session(ssl, it->second.session);
    }
  }
  return ssl;
}

bool ClientContext::keep_session(std::string_view session_key, SSL* ssl) const {
  SSL_SESSION* live = SSL_get1_session(ssl);
  if (live == nullptr) {
    return false;
  }
  // A copy: SSL_free of a connection closed without close_notify (the usual end of an
  // upstream connection) marks its own session not resumable.
  SSL_SESSION* s = SSL_SESSION_is_resumable(live) ? SSL_SESSION_dup(live) : nullptr;
  SSL_SESSION_free(live);
  if (s == nullptr) {
    return false;
  }
  std::lock_guard lock(mu_);
  std::string key(session_key);
  auto it = sessions_.find(key);
  if (it == sessions_.end() && sessions_.size() >= std::max<size_t>(opts_.max_sessions, 1)) {
    auto oldest = sessions_.begin();
    for (auto i = sessions_.begin(); i != sessions_.end(); ++i) {
      if (i->second.order < oldest->second.order) {
        oldest = i;
      }
    }
    SSL_SESSION_free(oldest->second.session);
    sessions_.erase(oldest);
  }
  Kept& slot = sessions_[key];
  if (slot.session != nullptr) {
    SSL_SESSION_free(slot.session);
  }
  slot = {s, ++kept_};
  return true;
}

size_t ClientContext::session_count() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace sluice::tls
