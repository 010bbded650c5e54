#include <gtest/gtest.h>
#include <openssl/err.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/pem_check.h"
#include "config/resources.h"

namespace sluice::config {
namespace resources_ssl_test {

// testdata/*.pem: made by the openssl CLI (see testdata/README.md).
std::string fixture(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "testdata" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    ADD_FAILURE() << "missing fixture " << path;
  }
  return ss.str();
}

// A well-formed PEM block whose body is base64 of "ABCABC...": PEM-shaped, not DER.
std::string garbage_pem(const std::string& label) {
  std::string body;
  for (int i = 0; i < 60; ++i) {
    body += "QUJD";
  }
  return "-----BEGIN " + label + "-----\n" + body + "\n-----END " + label + "-----\n";
}

// The strings a template's one- or two-letter placeholders stand for.
const std::map<std::string, std::string>& pems() {
  static const std::map<std::string, std::string> m = {
      {"C", fixture("cert.pem")},                                // self-signed, CN=test.example
      {"K", fixture("key.pem")},                                 // C's key
      {"CC", fixture("chain.pem")},                              // C, then O
      {"O", fixture("other_cert.pem")},                          // self-signed, CN=other.example
      {"OK", fixture("other_key.pem")},                          // O's key, not C's
      {"KE", fixture("encrypted_key.pem")},                      // K under a passphrase
      {"OC", fixture("other_cert.pem") + fixture("cert.pem")},   // a chain led by O
      {"CG", fixture("cert.pem") + garbage_pem("CERTIFICATE")},  // a chain whose 2nd is bad
      {"GC", garbage_pem("CERTIFICATE")},
      {"GK", garbage_pem("PRIVATE KEY")},
      {"X", std::string(128, 'x')},  // long enough for APISIX's minLength, but no PEM
  };
  return m;
}

Json ssl_json(std::string text) {
  Json j = Json::parse(text);
  std::vector<Json*> todo{&j};
  while (!todo.empty()) {
    Json* v = todo.back();
    todo.pop_back();
    if (v->is_string()) {
      auto it = pems().find(v->get_ref<const std::string&>());
      if (it != pems().end()) {
        *v = it->second;
      }
    }
    if (v->is_structured()) {  // a primitive iterates over itself
      for (auto& child : *v) {
        todo.push_back(&child);
      }
    }
  }
  return j;
}

struct Case {
  const char* json;
  std::string error;    // empty = valid
  bool prefix = false;  // error is a prefix: the OpenSSL reason after it varies by version
};

const std::string kIc = "invalid configuration: ";
const std::string kNotPemCert = R"(failed to parse cert: not a PEM block (no "-----BEGIN" line))";
const std::string kNotPemKey = R"(failed to parse key: not a PEM block (no "-----BEGIN" line))";
// A key that is not PEM text is taken for one sealed with apisix.data_encryption's keyring (the
// default keyring is on), as APISIX's ssl.validate takes it.
const std::string kNotSealedKey =
    "failed to decrypt previous encrypted key: decrypt ssl key failed";

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_ssl(ssl_json(c.json));
    if (c.error.empty()) {
      EXPECT_TRUE(r.is_ok()) << r.status().message();
    } else {
      ASSERT_FALSE(r.is_ok());
      if (c.prefix) {
        EXPECT_TRUE(r.status().message().starts_with(c.error)) << r.status().message();
        EXPECT_GT(r.status().message().size(), c.error.size()) << "no reason after the prefix";
      } else {
        EXPECT_EQ(r.status().message(), c.error);
      }
    }
    EXPECT_EQ(ERR_peek_error(), 0u) << "an OpenSSL error was left on the queue";
  }
}

TEST(DecodeSsl, Valid) {
  run_cases({
      {R"({"cert": "C", "key": "K", "sni": "a.com"})", ""},
      {R"({"id": "s1", "type": "server", "cert": "C", "key": "K", "snis": ["a.com", "*.b.com"],
           "certs": ["C"], "keys": ["K"], "labels": {"a": "b"}, "status": 0,
           "ssl_protocols": ["TLSv1.2", "TLSv1.3"], "client": {"ca": "C", "depth": 2},
           "validity_start": 1, "validity_end": 2, "create_time": 1, "update_time": 2})",
       ""},
      {R"({"type": "client", "cert": "C", "key": "K"})", ""},
      {R"({"cert": "$secret://vault/1/cert", "key": "$env://SSL_KEY", "sni": "a.com"})", ""},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C", "C"], "keys": ["K", "K"]})", ""},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["O", "CC"], "keys": ["OK", "K"]})",
       ""},
      {R"({"cert": "CC", "key": "K", "sni": "a.com", "client": {"ca": "OC"}})", ""},
      {R"({"cert": "$secret://vault/1/cert", "key": "K", "sni": "a.com"})", ""},
      {R"({"cert": "C", "key": "$env://SSL_KEY", "sni": "a.com"})", ""},
  });
}

TEST(DecodeSsl, Shape) {
  const std::string none =
      kIc +
      "value should match only one schema, but matches none (a server certificate needs cert, "
      "key, and sni or snis)";
  run_cases({
      {R"({"cert": "C", "key": "K"})", none},
      {R"({"key": "K", "sni": "a.com"})", none},
      {R"({"cert": "C", "sni": "a.com"})", none},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "snis": ["b.com"]})",
       kIc + "value should match only one schema, but matches both schemas 1 and 2 (sni and snis "
             "are mutually exclusive)"},
      {R"({"type": "client", "cert": "C"})", kIc + R"(property "key" is required)"},
      {R"({"type": "client", "key": "K"})", kIc + R"(property "cert" is required)"},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "exptime": 1})",
       kIc + "additional properties forbidden, found exptime"},
      {R"(1)", kIc + "wrong type: expected object, got number"},
  });
}

TEST(DecodeSsl, FieldTypesAndRanges) {
  auto prop = [](const char* name, const std::string& inner) {
    return kIc + "property \"" + name + "\" validation failed: " + inner;
  };
  run_cases({
      {R"({"cert": "abc", "key": "K", "sni": "a.com"})",
       prop("cert", "string too short, expected at least 128, got 3")},
      {R"({"cert": 1, "key": "K", "sni": "a.com"})",
       prop("cert", "wrong type: expected string, got number")},
      {R"({"cert": "C", "key": "K", "sni": "a b"})",
       prop("sni", R"(failed to match pattern "^\*?[0-9a-zA-Z-._]+$" with "a b")")},
      {R"({"cert": "C", "key": "K", "snis": []})",
       prop("snis", "expect array to have at least 1 items")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "type": "x"})",
       prop("type", "matches none of the enum values")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "status": 2})",
       prop("status", "matches none of the enum values")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "ssl_protocols": ["TLSv1.0"]})",
       prop("ssl_protocols", "failed to validate item 1: matches none of the enum values")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "ssl_protocols": ["TLSv1.2", "TLSv1.2"]})",
       prop("ssl_protocols", "expected unique items but items 1 and 2 are equal")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": "C"})",
       prop("certs", "wrong type: expected array, got string")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "keys": ["k"]})",
       prop("keys", "failed to validate item 1: string too short, expected at least 128, got 1")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {}})",
       prop("client", R"(property "ca" is required)")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "C", "depth": -1}})",
       prop("client", R"(property "depth" validation failed: expected -1 to be at least 0)")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "C", "x": 1}})",
       prop("client", "additional properties forbidden, found x")},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "labels": []})",
       prop("labels", "wrong type: expected object, got table")},
  });
}

TEST(DecodeSsl, PemChecksFollowTheSchema) {
  run_cases({
      {R"({"cert": "X", "key": "K", "sni": "a.com"})", kNotPemCert},
      {R"({"cert": "C", "key": "X", "sni": "a.com"})", kNotSealedKey},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C"]})",
       "mismatched number of certs and keys"},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C", "X"], "keys": ["K", "K"]})",
       "failed to handle cert-key pair[2]: " + kNotPemCert},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "X"}})",
       "failed to validate client_cert: " + kNotPemCert},
      {R"({"type": "client", "cert": "C", "key": "X"})", kNotSealedKey},
  });
}

TEST(DecodeSsl, PemsMustParse) {
  const std::string cert = "failed to parse cert: ";
  const std::string key = "failed to parse key: ";
  const std::string mismatch = "the key does not match the certificate";
  run_cases({
      {R"({"cert": "GC", "key": "K", "sni": "a.com"})", cert, true},
      {R"({"cert": "C", "key": "GK", "sni": "a.com"})", key, true},
      {R"({"cert": "GC", "key": "GK", "sni": "a.com"})", cert, true},
      {R"({"cert": "C", "key": "KE", "sni": "a.com"})", key + "encrypted keys are not supported (",
       true},
      {R"({"type": "client", "cert": "C", "key": "KE"})", key, true},
      {R"({"cert": "C", "key": "C", "sni": "a.com"})", key, true},
      {R"({"cert": "K", "key": "K", "sni": "a.com"})", cert, true},
      {R"({"cert": "C", "key": "OK", "sni": "a.com"})",
       "failed to handle cert-key pair: " + mismatch},
      {R"({"cert": "OC", "key": "K", "sni": "a.com"})",
       "failed to handle cert-key pair: " + mismatch},
      {R"({"cert": "$secret://v/1", "key": "GK", "sni": "a.com"})", key, true},
      {R"({"cert": "GC", "key": "$env://K", "sni": "a.com"})", cert, true},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C", "C"], "keys": ["K", "OK"]})",
       "failed to handle cert-key pair[2]: " + mismatch},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["GC"], "keys": ["K"]})",
       "failed to handle cert-key pair[1]: " + cert, true},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C"], "keys": ["KE"]})",
       "failed to handle cert-key pair[1]: " + key, true},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "GC"}})",
       "failed to validate client_cert: " + cert, true},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "K"}})",
       "failed to validate client_cert: " + cert, true},
  });
}

TEST(DecodeSsl, EveryCertificateOfAChainMustParse) {
  auto r = decode_ssl(ssl_json(R"({"cert": "CG", "key": "K", "sni": "a.com"})"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(r.status().message().starts_with("failed to parse cert: ")) << r.status().message();
  EXPECT_TRUE(r.status().message().ends_with(" (certificate 2 of the chain)"))
      << r.status().message();
  auto ca =
      decode_ssl(ssl_json(R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "CG"}})"));
  ASSERT_FALSE(ca.is_ok());
  EXPECT_TRUE(ca.status().message().ends_with(" (certificate 2 of the chain)"))
      << ca.status().message();
  EXPECT_EQ(ERR_peek_error(), 0u);
}

// pem_check is also called directly by whoever loads a referenced PEM.
TEST(PemCheck, LeavesNoErrorBehind) {
  ERR_raise(ERR_LIB_USER, 1);  // a stale error, not ours: dropped, not reported
  EXPECT_TRUE(check_certificate_pem(pems().at("CC")).is_ok());
  EXPECT_EQ(ERR_peek_error(), 0u);
  EXPECT_TRUE(check_private_key_pem(pems().at("K")).is_ok());
  EXPECT_TRUE(check_cert_key_pair(pems().at("C"), pems().at("K")).is_ok());
  EXPECT_EQ(check_cert_key_pair(pems().at("C"), pems().at("OK")).message(),
            "the key does not match the certificate");
  EXPECT_EQ(ERR_peek_error(), 0u);
  EXPECT_EQ(check_private_key_pem("").message(), kNotPemKey);
  EXPECT_EQ(check_certificate_pem("").message(), kNotPemCert);
}

TEST(DecodeSsl, ReadsFields) {
  auto r = decode_ssl(ssl_json(
      R"({"id": 9, "cert": "C", "key": "K", "sni": "A.com", "client": {"ca": "C"},
          "ssl_protocols": ["TLSv1.3"]})"));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->id, "9");
  EXPECT_EQ(r->type, SslType::kServer);
  EXPECT_EQ(r->cert, pems().at("C"));
  EXPECT_EQ(r->snis, std::vector<std::string>{"A.com"});
  ASSERT_TRUE(r->client.has_value());
  EXPECT_EQ(r->client->depth, 1);
  EXPECT_EQ(r->ssl_protocols, std::vector<std::string>{"TLSv1.3"});
  EXPECT_EQ(r->status, 1);
  auto c = decode_ssl(ssl_json(R"({"type": "client", "cert": "C", "key": "K"})"));
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->type, SslType::kClient);
  EXPECT_TRUE(c->snis.empty());
}

}  // namespace resources_ssl_test
}  // namespace sluice::config
