// PEM checks with OpenSSL. Every function leaves this thread's OpenSSL error queue empty,
// so a later TLS call on the same thread never reads a stale error of ours.

#include "config/pem_check.h"

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <climits>
#include <memory>
#include <string>

#include "common/status.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

struct OpensslFree {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, OpensslFree>;

// Empties the error queue on entry (so the reason read is ours) and on every way out.
class ErrorQueueScope {
 public:
  ErrorQueueScope() { ERR_clear_error(); }
  ~ErrorQueueScope() { ERR_clear_error(); }
  ErrorQueueScope(const ErrorQueueScope&) = delete;
  ErrorQueueScope& operator=(const ErrorQueueScope&) = delete;
};

// The oldest error on the queue is the root cause ("wrong tag"); later ones only wrap it.
std::string take_reason() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "no PEM data";
  }
  const char* reason = ERR_reason_error_string(e);
  return reason != nullptr ? reason : fmt::format("OpenSSL error {:#x}", e);
}

// OpenSSL skips text before a block, so only "no block at all" is refused here; it says so
// more plainly than OpenSSL's "no start line" (certs) or "unsupported" (keys).
Status check_has_block(std::string_view what, std::string_view pem) {
  if (pem.find("-----BEGIN") == std::string_view::npos) {
    return Status::error(
        fmt::format("failed to parse {}: not a PEM block (no \"-----BEGIN\" line)", what));
  }
  return Status::ok();
}

StatusOr<Owned<BIO>> memory_bio(std::string_view what, std::string_view pem) {
  Status s = check_has_block(what, pem);
  if (!s.is_ok()) {
    return s;
  }
  if (pem.size() > INT_MAX) {
    return Status::error(fmt::format("failed to parse {}: PEM text too large", what));
  }
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) {
    return Status::error(fmt::format("failed to parse {}: {}", what, take_reason()));
  }
  return bio;
}

// End of input shows as PEM's "no start line"; anything else means a block failed to parse.
bool at_end_of_pem() {
  unsigned long e = ERR_peek_last_error();
  return ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE;
}

// The first certificate of the chain; the ones after it must parse too.
StatusOr<Owned<X509>> read_chain(std::string_view pem) {
  auto bio = memory_bio("cert", pem);
  if (!bio.is_ok()) {
    return bio.status();
  }
  Owned<X509> first(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (first == nullptr) {
    return Status::error("failed to parse cert: " + take_reason());
  }
  for (int n = 2;; ++n) {
    Owned<X509> next(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
    if (next != nullptr) {
      continue;
    }
    if (at_end_of_pem()) {
      ERR_clear_error();
      return first;
    }
    return Status::error(
        fmt::format("failed to parse cert: {} (certificate {} of the chain)", take_reason(), n));
  }
}

// A password callback that supplies none: an encrypted key fails instead of prompting on
// the terminal, which is what OpenSSL does when no callback is given.
int no_password(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*userdata*/) { return 0; }

StatusOr<Owned<EVP_PKEY>> read_key(std::string_view pem) {
  auto bio = memory_bio("key", pem);
  if (!bio.is_ok()) {
    return bio.status();
  }
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio->get(), nullptr, no_password, nullptr));
  if (key == nullptr) {
    std::string reason = take_reason();
    if (pem.find("ENCRYPTED") != std::string_view::npos) {
      reason = "encrypted keys are not supported (" + reason + ")";
    }
    return Status::error("failed to parse key: " + reason);
  }
  return key;
}

}  // namespace

Status check_certificate_pem(std::string_view pem) {
  ErrorQueueScope scope;
  auto cert = read_chain(pem);
  return cert.is_ok() ? Status::ok() : cert.status();
}

Status check_private_key_pem(std::string_view pem) {
  ErrorQueueScope scope;
  auto key = read_key(pem);
  return key.is_ok() ? Status::ok() : key.status();
}

Status check_cert_key_pair(std::string_view cert, std::string_view key) {
  ErrorQueueScope scope;
  auto x509 = read_chain(cert);
  if (!x509.is_ok()) {
    return x509.status();
  }
  auto pkey = read_key(key);
  if (!pkey.is_ok()) {
    return pkey.status();
  }
  if (X509_check_private_key(x509->get(), pkey->get()) != 1) {
    return Status::error("the key does not match the certificate");
  }
  return Status::ok();
}

}  // namespace sluice::config
