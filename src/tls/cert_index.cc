#include "tls/cert_index.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <pcre2.h>

#include <functional>
#include <mutex>

#include "common/strings.h"

namespace sluice::tls {

using common::Status;
using common::StatusOr;

namespace {

std::string openssl_error() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown error";
  }
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

BIO* mem_bio(const std::string& pem) {
  return BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
}

// The first certificate of `pem`, and the rest as its chain.
Status read_certs(const std::string& pem, X509** leaf, STACK_OF(X509) * *chain) {
  BIO* bio = mem_bio(pem);
  *leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  if (*leaf == nullptr) {
    BIO_free(bio);
    return Status::error("failed to parse cert: " + openssl_error());
  }
  while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (*chain == nullptr) {
      *chain = sk_X509_new_null();
    }
    sk_X509_push(*chain, extra);
  }
  ERR_clear_error();  // the end of the PEM reads as an error
  BIO_free(bio);
  return Status::ok();
}

int version_of(std::string_view name) {
  if (name == "TLSv1.1") {
    return TLS1_1_VERSION;
  }
  if (name == "TLSv1.2") {
    return TLS1_2_VERSION;
  }
  return TLS1_3_VERSION;
}

// SHA-256 of what a resumed session must not outlive: the object, its certificates and how it
// verifies clients. OpenSSL resumes a session only under the context it was made in.
void session_context(const CertSource& src, unsigned char* out) {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  EVP_DigestInit_ex(md, EVP_sha256(), nullptr);
  auto add = [md](std::string_view part) {
    uint64_t n = part.size();  // length-prefixed: no two sources give the same bytes
    EVP_DigestUpdate(md, &n, sizeof(n));
    EVP_DigestUpdate(md, part.data(), part.size());
  };
  add(src.id);
  for (const auto& [cert, key] : src.pairs) {
    add(cert);
  }
  add(src.client_ca);
  add(std::to_string(src.client_depth));
  unsigned int len = 0;
  EVP_DigestFinal_ex(md, out, &len);
  EVP_MD_CTX_free(md);
}

std::string lower_name(std::string_view sni) {
  if (!sni.empty() && sni.back() == '.') {
    sni.remove_suffix(1);
  }
  std::string out(sni);
  for (char& c : out) {
    c = common::ascii_lower(c);
  }
  return out;
}

}  // namespace

CertEntry::~CertEntry() {
  for (Pair& p : pairs_) {
    X509_free(p.cert);
    EVP_PKEY_free(p.key);
    if (p.chain != nullptr) {
      sk_X509_pop_free(p.chain, X509_free);
    }
  }
  X509_STORE_free(client_store_);
  if (client_names_ != nullptr) {
    sk_X509_NAME_pop_free(client_names_, X509_NAME_free);
  }
  for (pcre2_code* c : skip_) {
    pcre2_code_free(c);
  }
}

StatusOr<std::shared_ptr<const CertEntry>> CertEntry::load(const CertSource& src) {
  auto e = std::make_shared<CertEntry>();
  e->id_ = src.id;
  session_context(src, e->sid_ctx_);
  auto fail = [&src](const std::string& why) {
    return Status::error(fmt::format("ssl {}: {}", src.id, why));
  };
  for (const auto& [cert_pem, key_pem] : src.pairs) {
    Pair p;
    Status st = read_certs(cert_pem, &p.cert, &p.chain);
    if (st.is_ok()) {
      BIO* bio = mem_bio(key_pem);
      p.key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      if (p.key == nullptr) {
        st = Status::error("failed to parse key: " + openssl_error());
      } else if (X509_check_private_key(p.cert, p.key) != 1) {
        st = Status::error("failed to handle cert-key pair: the key is not the certificate's");
        ERR_clear_error();
      }
    }
    e->pairs_.push_back(p);  // freed by the destructor whatever happened
    if (!st.is_ok()) {
      return fail(st.message());
    }
  }
  if (!src.client_ca.empty()) {
    X509* ca = nullptr;
    STACK_OF(X509)* more = nullptr;
    Status st = read_certs(src.client_ca, &ca, &more);
    if (!st.is_ok()) {
      return fail("failed to validate client_cert: " + st.message());
    }
    e->client_store_ = X509_STORE_new();
    e->client_names_ = sk_X509_NAME_new_null();
    auto add_ca = [&e](X509* c) {
      X509_STORE_add_cert(e->client_store_, c);
      sk_X509_NAME_push(e->client_names_, X509_NAME_dup(X509_get_subject_name(c)));
      X509_free(c);
    };
    add_ca(ca);
    if (more != nullptr) {
      while (sk_X509_num(more) > 0) {
        add_ca(sk_X509_shift(more));
      }
      sk_X509_free(more);
    }
    e->depth_ = src.client_depth;
  }
  for (const std::string& re : src.skip_mtls_uri_regex) {
    int err = 0;
    PCRE2_SIZE off = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), 0, &err, &off, nullptr);
    if (code == nullptr) {
      return fail(fmt::format("invalid skip_mtls_uri_regex \"{}\" at offset {}", re, off));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    e->skip_.push_back(code);
  }
  bool listed[3] = {false, false, false};  // 1.1, 1.2, 1.3
  for (const std::string& p : src.protocols) {
    int v = version_of(p);
    e->min_version_ = e->min_version_ == 0 ? v : std::min(e->min_version_, v);
    e->max_version_ = std::max(e->max_version_, v);
    listed[v == TLS1_1_VERSION ? 0 : v == TLS1_2_VERSION ? 1 : 2] = true;
  }
  if (e->min_version_ == TLS1_1_VERSION && e->max_version_ == TLS1_3_VERSION && !listed[1]) {
    e->no_versions_ = SSL_OP_NO_TLSv1_2;
  }
  return std::shared_ptr<const CertEntry>(std::move(e));
}

std::shared_ptr<const CertEntry> CertEntry::broken(const std::string& id, const std::string& why) {
  auto e = std::make_shared<CertEntry>();
  e->id_ = id;
  e->broken_ = why.empty() ? std::string("it could not be loaded") : why;
  return e;
}

bool CertEntry::apply(SSL* ssl) const {
  if (!broken_.empty()) {
    return false;
  }
  // Before OpenSSL looks the client's session up (the ClientHello callback runs first): a
  // session verified for another object's clients, or made under another object's name, is
  // a cache miss, and the handshake is a full one under this object's rules.
  if (SSL_set_session_id_context(ssl, sid_ctx_, sizeof(sid_ctx_)) != 1) {
    ERR_clear_error();
    return false;
  }
  for (const Pair& p : pairs_) {
    // One pair per key type: OpenSSL keeps an RSA and an ECDSA pair side by side and picks by
    // what the client's signature algorithms allow.
    if (SSL_use_cert_and_key(ssl, p.cert, p.key, p.chain, 1) != 1) {
      ERR_clear_error();
      return false;
    }
  }
  if (min_version_ != 0) {
    SSL_set_min_proto_version(ssl, min_version_);
    SSL_set_max_proto_version(ssl, max_version_);
    if (no_versions_ != 0) {
      SSL_set_options(ssl, no_versions_);  // a gap in the list ({TLSv1.1, TLSv1.3})
    }
    if (min_version_ < TLS1_2_VERSION) {
      SSL_set_security_level(ssl, 0);  // TLS 1.1 signs with SHA-1, below level 1
    }
  }
  if (client_store_ != nullptr) {
    SSL_set1_verify_cert_store(ssl, client_store_);
    STACK_OF(X509_NAME)* names = SSL_dup_CA_list(client_names_);
    SSL_set_client_CA_list(ssl, names);
    SSL_set_verify_depth(ssl, depth_);
    if (skip_.empty()) {
      // No exemption: a missing or bad certificate fails the handshake, as APISIX does
      // (reject_in_handshake).
      SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    } else {
      // Checked per request: the handshake completes and ssl_client_verify tells.
      SSL_set_verify(ssl, SSL_VERIFY_PEER, [](int, X509_STORE_CTX*) { return 1; });
    }
  }
  return true;
}

bool CertEntry::skips_mtls(std::string_view path) const {
  for (pcre2_code* c : skip_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(c, nullptr);
    int rc =
        pcre2_match(c, reinterpret_cast<PCRE2_SPTR>(path.data()), path.size(), 0, 0, md, nullptr);
    pcre2_match_data_free(md);
    if (rc >= 0) {
      return true;
    }
  }
  return false;
}

void CertIndex::add(std::string_view sni, const CertEntryPtr& e) {
  any_mtls_ = any_mtls_ || e->verifies_clients();
  std::string name = lower_name(sni);
  if (name == "*") {
    if (!any_) {
      any_ = e;
    }
  } else if (name.starts_with("*.")) {
    wild_.emplace(name.substr(2), e);
  } else {
    exact_.emplace(std::move(name), e);
  }
}

const CertEntryPtr* CertIndex::find(std::string_view sni) const {
  if (sni.empty()) {
    return nullptr;
  }
  char buf[256];
  if (!sni.empty() && sni.back() == '.') {
    sni.remove_suffix(1);
  }
  if (sni.empty() || sni.size() > sizeof(buf)) {
    return nullptr;
  }
  for (size_t i = 0; i < sni.size(); ++i) {
    buf[i] = common::ascii_lower(sni[i]);
  }
  std::string key(buf, sni.size());
  if (auto it = exact_.find(key); it != exact_.end()) {
    return &it->second;
  }
  // "*.b.c" covers "a.b.c" only. APISIX's radix tree picks the deepest wildcard suffix of the
  // name and then refuses it when it would cover more than one label; `*` is the last resort
  // only when no wildcard suffix matched at all.
  size_t dot = key.find('.');
  bool first = true;
  while (dot != std::string::npos) {
    auto it = wild_.find(key.substr(dot + 1));
    if (it != wild_.end()) {
      return first ? &it->second : nullptr;
    }
    first = false;
    dot = key.find('.', dot + 1);
  }
  return any_ ? &any_ : nullptr;
}

const CertEntryPtr* CertIndex::find_id(const std::string& id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

namespace {

struct CacheSlot {
  size_t hash = 0;
  CertEntryPtr entry;
  bool used = false;
};

std::mutex cache_mu;
std::unordered_map<std::string, CacheSlot>& cache() {
  static auto* c = new std::unordered_map<std::string, CacheSlot>();
  return *c;
}

size_t source_hash(const CertSource& s) {
  std::hash<std::string> h;
  size_t v = h(s.client_ca) ^ (static_cast<size_t>(s.client_depth) * 0x9e3779b97f4a7c15ULL);
  auto mix = [&v](size_t x) { v = (v ^ x) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL; };
  for (const auto& [c, k] : s.pairs) {
    mix(h(c));
    mix(h(k));
  }
  for (const auto& r : s.skip_mtls_uri_regex) {
    mix(h(r));
  }
  for (const auto& p : s.protocols) {
    mix(h(p));
  }
  return v;
}

}  // namespace

CertEntryPtr cached_cert_entry(const CertSource& src, Status* err) {
  size_t hash = source_hash(src);
  std::lock_guard lock(cache_mu);
  CacheSlot& slot = cache()[src.id];
  if (slot.entry && slot.hash == hash) {
    slot.used = true;
    return slot.entry;
  }
  auto loaded = CertEntry::load(src);
  if (!loaded.is_ok()) {
    *err = loaded.status();
    return nullptr;
  }
  slot = {hash, std::move(loaded).value(), true};
  return slot.entry;
}

void sweep_cert_cache() {
  std::lock_guard lock(cache_mu);
  auto& c = cache();
  for (auto it = c.begin(); it != c.end();) {
    if (!it->second.used) {
      it = c.erase(it);
    } else {
      it->second.used = false;
      ++it;
    }
  }
}

}  // namespace sluice::tls
