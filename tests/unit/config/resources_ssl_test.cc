#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/resources.h"

namespace sluice::config {
namespace {

// Shape-only PEMs, long enough for APISIX's minLength of 128.
const std::string kCert =
    "-----BEGIN CERTIFICATE-----\n" + std::string(100, 'A') + "\n-----END CERTIFICATE-----\n";
const std::string kKey =
    "-----BEGIN PRIVATE KEY-----\n" + std::string(100, 'B') + "\n-----END PRIVATE KEY-----\n";
const std::string kNotPem(128, 'x');

// `C`, `K` and `X` in the template stand for a certificate, a key and a 128-byte non-PEM.
Json ssl_json(std::string text) {
  Json j = Json::parse(text);
  std::vector<Json*> todo{&j};
  while (!todo.empty()) {
    Json* v = todo.back();
    todo.pop_back();
    if (v->is_string()) {
      const std::string& s = v->get_ref<const std::string&>();
      if (s == "C") {
        *v = kCert;
      } else if (s == "K") {
        *v = kKey;
      } else if (s == "X") {
        *v = kNotPem;
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
  std::string error;  // exact; empty = valid
};

const std::string kIc = "invalid configuration: ";
const std::string kNotPemCert = R"(failed to parse cert: not a PEM block (no "-----BEGIN" line))";
const std::string kNotPemKey = R"(failed to parse key: not a PEM block (no "-----BEGIN" line))";

void run_cases(const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json);
    auto r = decode_ssl(ssl_json(c.json));
    if (c.error.empty()) {
      EXPECT_TRUE(r.is_ok()) << r.status().message();
    } else {
      ASSERT_FALSE(r.is_ok());
      EXPECT_EQ(r.status().message(), c.error);
    }
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
       prop("labels", "wrong type: expected object, got array")},
  });
}

TEST(DecodeSsl, PemChecksFollowTheSchema) {
  run_cases({
      {R"({"cert": "X", "key": "K", "sni": "a.com"})", kNotPemCert},
      {R"({"cert": "C", "key": "X", "sni": "a.com"})", kNotPemKey},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C"]})",
       "mismatched number of certs and keys"},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "certs": ["C", "X"], "keys": ["K", "K"]})",
       "failed to handle cert-key pair[2]: " + kNotPemCert},
      {R"({"cert": "C", "key": "K", "sni": "a.com", "client": {"ca": "X"}})",
       "failed to validate client_cert: " + kNotPemCert},
      {R"({"type": "client", "cert": "C", "key": "X"})", kNotPemKey},
  });
}

TEST(DecodeSsl, ReadsFields) {
  auto r = decode_ssl(ssl_json(
      R"({"id": 9, "cert": "C", "key": "K", "sni": "A.com", "client": {"ca": "C"},
          "ssl_protocols": ["TLSv1.3"]})"));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->id, "9");
  EXPECT_EQ(r->type, SslType::kServer);
  EXPECT_EQ(r->cert, kCert);
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

}  // namespace
}  // namespace sluice::config
