#pragma once
// Server certificates by SNI, as APISIX's radixtree_sni matches them: an exact name first, then
// the deepest `*.suffix` wildcard (which covers exactly one more label), then `*` for any name.
// A lookup costs a few hash probes, one per label of the name: O(length of the name), whatever
// the number of certificates.

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

typedef struct pcre2_real_code_8 pcre2_code_8;

namespace sluice::tls {

// What one `ssls` object is made of, as text (the config room's SslConf, decrypted).
// Thread: any (value type)
struct CertSource {
  std::string id;
  std::vector<std::pair<std::string, std::string>> pairs;  // (cert PEM, key PEM), first = cert/key
  std::string client_ca;                                   // PEM; empty: no client certificates
  int client_depth = 1;
  std::vector<std::string> skip_mtls_uri_regex;
  std::vector<std::string> protocols;  // TLSv1.1 | TLSv1.2 | TLSv1.3; empty: the listener's
};

// One `ssls` object, parsed once and shared by every handshake that picks it.
// Thread: any (immutable after load)
class CertEntry {
 public:
  struct Pair {
    X509* cert = nullptr;
    STACK_OF(X509) * chain = nullptr;  // the PEM's further certificates; may be null
    EVP_PKEY* key = nullptr;
  };

  ~CertEntry();
  CertEntry() = default;
  CertEntry(const CertEntry&) = delete;
  CertEntry& operator=(const CertEntry&) = delete;

  // Errors read as APISIX's ("failed to parse cert: ..."), prefixed with the object's id.
  static common::StatusOr<std::shared_ptr<const CertEntry>> load(const CertSource& src);
  // Stands for an object that could not be loaded, under its names: their handshakes fail
  // (as APISIX's do) instead of falling to a wildcard sibling, which could lack its mTLS.
  static std::shared_ptr<const CertEntry> broken(const std::string& id, const std::string& why);
  // Why this object cannot be served, or empty.
  const std::string& broken_reason() const { return broken_; }

  // Installs this object's certificates and client verification on a handshake in progress
  // (the ClientHello callback). False when OpenSSL refuses one.
  bool apply(SSL* ssl) const;
  // Whether `path` (the request's normalised path) is exempt from the client certificate.
  bool skips_mtls(std::string_view path) const;

  const std::string& id() const { return id_; }
  const std::vector<Pair>& pairs() const { return pairs_; }
  // The session id context apply() gives a handshake: a digest of the object's id, its
  // certificates and its client verification, so a session made under one object (or under
  // settings since changed) is never resumed under another.
  const unsigned char* session_id_context() const { return sid_ctx_; }
  static constexpr unsigned kSessionIdContextLength = 32;
  bool verifies_clients() const { return client_store_ != nullptr; }
  // Client certificates are checked per request (skip_mtls_uri_regex), not in the handshake.
  bool verify_per_request() const { return !skip_.empty(); }

 private:
  std::string id_;
  std::string broken_;
  std::vector<Pair> pairs_;
  X509_STORE* client_store_ = nullptr;
  STACK_OF(X509_NAME) * client_names_ = nullptr;  // the CA names sent in CertificateRequest
  int depth_ = 1;
  std::vector<pcre2_code_8*> skip_;
  int min_version_ = 0, max_version_ = 0;  // 0: the listener's
  uint64_t no_versions_ = 0;               // SSL_OP_NO_* for a version inside the range
  unsigned char sid_ctx_[kSessionIdContextLength] = {};
};

using CertEntryPtr = std::shared_ptr<const CertEntry>;

// Thread: any (immutable after the builder's add calls)
class CertIndex {
 public:
  // `sni` as stored by APISIX: lower case, no trailing dot; "*.x.y" and "*" are wildcards.
  // The first object to claim a name keeps it.
  void add(std::string_view sni, const CertEntryPtr& e);
  // `type: client` objects, for upstreams' tls.client_cert_id.
  void add_by_id(const std::string& id, const CertEntryPtr& e) { by_id_.emplace(id, e); }

  // The object serving `sni` (any case, a trailing dot ignored), or null.
  const CertEntryPtr* find(std::string_view sni) const;
  const CertEntryPtr* find_id(const std::string& id) const;
  size_t size() const { return exact_.size() + wild_.size() + (any_ ? 1 : 0); }
  // Some server object verifies client certificates: requests must then be checked against
  // the object their Host names (ClientConn::tls_client_ok).
  bool any_client_verification() const { return any_mtls_; }

 private:
  std::unordered_map<std::string, CertEntryPtr> exact_;
  std::unordered_map<std::string, CertEntryPtr> wild_;  // "*.x.y" stored as "x.y"
  CertEntryPtr any_;                                    // "*"
  bool any_mtls_ = false;
  std::unordered_map<std::string, CertEntryPtr> by_id_;
};

// Keeps parsed objects across snapshot builds, so a route change does not parse every
// certificate again: an object is parsed again only when its text changed.
// Thread: control (one builder at a time; a mutex guards tests that build concurrently)
CertEntryPtr cached_cert_entry(const CertSource& src, common::Status* err);
// Forgets the objects no build used since the previous call.
void sweep_cert_cache();

}  // namespace sluice::tls
