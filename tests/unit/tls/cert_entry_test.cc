#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tls/cert_index.h"
#include "unit/tls/test_pem.h"

namespace sluice::tls {
namespace {

using testing::self_signed;
using testing::signed_leaf;
using testing::TestPem;

// Made once: RSA keys take a while.
const TestPem& ec_pem() {
  static const TestPem p = self_signed("ec.test");
  return p;
}
const TestPem& rsa_pem() {
  static const TestPem p = self_signed("rsa.test", true);
  return p;
}

CertSource source_of(std::vector<std::pair<std::string, std::string>> pairs) {
  CertSource s;
  s.id = "7";
  s.pairs = std::move(pairs);
  return s;
}

std::string load_error(const CertSource& s) {
  auto r = CertEntry::load(s);
  return r.is_ok() ? "" : r.status().message();
}

TEST(CertEntryTest, LoadsOnePair) {
  auto r = CertEntry::load(source_of({{ec_pem().cert, ec_pem().key}}));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const CertEntry& e = **r;
  EXPECT_EQ(e.id(), "7");
  ASSERT_EQ(e.pairs().size(), 1u);
  EXPECT_NE(e.pairs()[0].cert, nullptr);
  EXPECT_NE(e.pairs()[0].key, nullptr);
  EXPECT_EQ(e.pairs()[0].chain, nullptr);
  EXPECT_FALSE(e.verifies_clients());
  EXPECT_FALSE(e.verify_per_request());
}

TEST(CertEntryTest, LoadsAnRsaAndAnEcdsaPair) {
  auto r =
      CertEntry::load(source_of({{rsa_pem().cert, rsa_pem().key}, {ec_pem().cert, ec_pem().key}}));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  ASSERT_EQ((*r)->pairs().size(), 2u);
  EXPECT_EQ(EVP_PKEY_get_base_id((*r)->pairs()[0].key), EVP_PKEY_RSA);
  EXPECT_EQ(EVP_PKEY_get_base_id((*r)->pairs()[1].key), EVP_PKEY_EC);
}

TEST(CertEntryTest, KeepsTheChain) {
  std::string ca;
  TestPem leaf = signed_leaf("leaf.test", &ca);
  auto r = CertEntry::load(source_of({{leaf.cert, leaf.key}}));
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const CertEntry::Pair& p = (*r)->pairs()[0];
  ASSERT_NE(p.chain, nullptr);
  EXPECT_EQ(sk_X509_num(p.chain), 1);
}

TEST(CertEntryTest, LoadErrors) {
  const TestPem& ec = ec_pem();
  const TestPem other = self_signed("other.test");
  struct Case {
    const char* name;
    CertSource src;
    const char* prefix;
  };
  std::vector<Case> cases = {
      {"cert not PEM", source_of({{"not a certificate", ec.key}}), "ssl 7: failed to parse cert: "},
      {"cert truncated", source_of({{ec.cert.substr(0, ec.cert.size() / 2), ec.key}}),
       "ssl 7: failed to parse cert: "},
      {"key not PEM", source_of({{ec.cert, "not a key"}}), "ssl 7: failed to parse key: "},
      {"key is a certificate", source_of({{ec.cert, ec.cert}}), "ssl 7: failed to parse key: "},
      {"key of another certificate", source_of({{ec.cert, other.key}}),
       "ssl 7: failed to handle cert-key pair: the key is not the certificate's"},
      {"second pair bad", source_of({{ec.cert, ec.key}, {other.cert, ec.key}}),
       "ssl 7: failed to handle cert-key pair: "},
      {"empty cert", source_of({{"", ec.key}}), "ssl 7: failed to parse cert: "},
  };
  CertSource bad_ca = source_of({{ec.cert, ec.key}});
  bad_ca.client_ca = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  cases.push_back({"client ca bad", bad_ca, "ssl 7: failed to validate client_cert: "});
  CertSource bad_re = source_of({{ec.cert, ec.key}});
  bad_re.client_ca = ec.cert;
  bad_re.skip_mtls_uri_regex = {"/ok", "/bad("};
  cases.push_back({"bad skip regex", bad_re, "ssl 7: invalid skip_mtls_uri_regex \"/bad(\""});
  for (const Case& c : cases) {
    std::string err = load_error(c.src);
    EXPECT_TRUE(err.starts_with(c.prefix)) << c.name << ": " << err;
  }
}

TEST(CertEntryTest, ClientVerification) {
  std::string ca;
  signed_leaf("client", &ca);
  CertSource s = source_of({{ec_pem().cert, ec_pem().key}});
  s.client_ca = ca;
  s.client_depth = 3;
  auto r = CertEntry::load(s);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE((*r)->verifies_clients());
  EXPECT_FALSE((*r)->verify_per_request()) << "no skip regex: checked in the handshake";
  EXPECT_FALSE((*r)->skips_mtls("/anything"));
}

TEST(CertEntryTest, SkipsMtls) {
  CertSource s = source_of({{ec_pem().cert, ec_pem().key}});
  s.client_ca = ec_pem().cert;
  s.skip_mtls_uri_regex = {"/hello[0-9]+", "^/public/", "^/exact$"};
  auto r = CertEntry::load(s);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  const CertEntry& e = **r;
  EXPECT_TRUE(e.verify_per_request());
  struct Case {
    const char* path;
    bool skip;
  };
  for (const Case& c : std::vector<Case>{{"/hello1", true},
                                         {"/hello42/x", true},
                                         {"/hello", false},
                                         {"/helloX", false},
                                         {"/x/hello1", true},  // a search, not a full match
                                         {"/public/a", true},
                                         {"/x/public/a", false},
                                         {"/public", false},
                                         {"/exact", true},
                                         {"/exact/", false},
                                         {"", false},
                                         {"/", false}}) {
    EXPECT_EQ(e.skips_mtls(c.path), c.skip) << c.path;
  }
  // A path with a NUL (normalised paths never have one, but the match takes the length).
  EXPECT_TRUE(e.skips_mtls(std::string_view("/hello1\0x", 9)));
}

TEST(CertEntryTest, Protocols) {
  CertSource s = source_of({{ec_pem().cert, ec_pem().key}});
  s.protocols = {"TLSv1.3"};
  EXPECT_TRUE(CertEntry::load(s).is_ok());
  s.protocols = {"TLSv1.1", "TLSv1.3"};
  EXPECT_TRUE(CertEntry::load(s).is_ok());
}

std::string context_of(const CertSource& s) {
  auto r = CertEntry::load(s);
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  if (!r.is_ok()) {
    return "";
  }
  const unsigned char* c = (*r)->session_id_context();
  return std::string(reinterpret_cast<const char*>(c), CertEntry::kSessionIdContextLength);
}

// Sessions are bound to the object that made them: a session verified for one object's
// clients must not resume under another object (or after its verification changed).
TEST(CertEntryTest, SessionIdContextPerObject) {
  std::string ca1, ca2;
  signed_leaf("c1", &ca1);
  signed_leaf("c2", &ca2);
  CertSource base = source_of({{ec_pem().cert, ec_pem().key}});
  base.client_ca = ca1;
  const std::string ctx = context_of(base);
  EXPECT_EQ(ctx.size(), CertEntry::kSessionIdContextLength);
  EXPECT_EQ(context_of(base), ctx) << "the same object: the same context";
  CertSource other_id = base;
  other_id.id = "8";
  CertSource other_ca = base;
  other_ca.client_ca = ca2;
  CertSource no_ca = base;
  no_ca.client_ca.clear();
  CertSource other_depth = base;
  other_depth.client_depth = 5;
  CertSource other_cert = base;
  other_cert.pairs = {{rsa_pem().cert, rsa_pem().key}};
  for (const CertSource* s : {&other_id, &other_ca, &no_ca, &other_depth, &other_cert}) {
    EXPECT_NE(context_of(*s), ctx) << "ssl " << s->id;
  }
  CertSource skip = base;
  skip.skip_mtls_uri_regex = {"/x"};
  EXPECT_EQ(context_of(skip), ctx) << "per-request exemptions do not change the session";
}

TEST(CertEntryTest, CachedEntryParsedOncePerText) {
  CertSource s = source_of({{ec_pem().cert, ec_pem().key}});
  s.id = "cache-test";
  common::Status err;
  CertEntryPtr a = cached_cert_entry(s, &err);
  ASSERT_NE(a, nullptr) << err.message();
  CertEntryPtr b = cached_cert_entry(s, &err);
  EXPECT_EQ(a, b) << "same text: the same object";
  s.skip_mtls_uri_regex = {"/x"};
  s.client_ca = ec_pem().cert;
  CertEntryPtr c = cached_cert_entry(s, &err);
  ASSERT_NE(c, nullptr) << err.message();
  EXPECT_NE(a, c) << "changed text: parsed again";
  s.pairs[0].first = "garbage";
  EXPECT_EQ(cached_cert_entry(s, &err), nullptr);
  EXPECT_TRUE(err.message().starts_with("ssl cache-test: failed to parse cert: ")) << err.message();
  sweep_cert_cache();
  sweep_cert_cache();
}

}  // namespace
}  // namespace sluice::tls
