#pragma once
// Certificates and keys made in memory for the tls room's tests: a self-signed CA, leaves it
// signs, and keys of either type, as PEM text (what `ssls` objects carry).

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

namespace sluice::tls::testing {

// Thread: any (test only)
struct TestPem {
  std::string cert, key;
};

inline std::string bio_text(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

inline EVP_PKEY* new_key(bool rsa) { return rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256"); }

inline std::string key_pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  return bio_text(bio);
}

inline std::string cert_pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  return bio_text(bio);
}

// A certificate for `cn` holding `key`, signed by `issuer_key` under `issuer` (itself when
// null: self-signed).
inline X509* new_cert(const char* cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key,
                      long serial) {
  X509* c = X509_new();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 3600L * 24 * 30);
  X509_set_pubkey(c, key);
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(c, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509_sign(c, issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return c;
}

// A self-signed certificate and its key.
inline TestPem self_signed(const char* cn, bool rsa = false, long serial = 1) {
  EVP_PKEY* key = new_key(rsa);
  X509* cert = new_cert(cn, key, nullptr, nullptr, serial);
  TestPem out{cert_pem(cert), key_pem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

// A CA and a leaf it signed: {leaf cert + CA cert as one PEM (a chain), leaf key}, and the
// CA's certificate alone in `ca_out`.
inline TestPem signed_leaf(const char* cn, std::string* ca_out) {
  EVP_PKEY* ca_key = new_key(false);
  X509* ca = new_cert("Test CA", ca_key, nullptr, nullptr, 1);
  EVP_PKEY* key = new_key(false);
  X509* leaf = new_cert(cn, key, ca, ca_key, 2);
  *ca_out = cert_pem(ca);
  TestPem out{cert_pem(leaf) + *ca_out, key_pem(key)};
  X509_free(leaf);
  X509_free(ca);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  return out;
}

}  // namespace sluice::tls::testing
