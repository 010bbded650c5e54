// ClientContext: the server name a connection sends and verifies, verification against given
// CAs, and sessions kept per key for resumption. Handshakes run in memory (a BIO pair) against
// an OpenSSL server holding the test.example certificate of tests/unit/config/testdata.

#include "tls/context.h"

#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/x509_vfy.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::tls {
namespace {

std::filesystem::path testdata(const char* name) {
  return std::filesystem::path(__FILE__).parent_path().parent_path() / "config" / "testdata" / name;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An OpenSSL server for test.example (self-signed), with session tickets (TLS 1.3).
class Server {
 public:
  Server() {
    ctx_ = SSL_CTX_new(TLS_server_method());
    EXPECT_EQ(SSL_CTX_use_certificate_file(ctx_, testdata("cert.pem").c_str(), SSL_FILETYPE_PEM),
              1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, testdata("key.pem").c_str(), SSL_FILETYPE_PEM), 1);
  }
  ~Server() { SSL_CTX_free(ctx_); }
  SSL_CTX* ctx() const { return ctx_; }

 private:
  SSL_CTX* ctx_;
};

// Runs a handshake between `client` and a new server SSL; true when both ends finished. The
// client then reads what followed (TLS 1.3 tickets). Frees both.
struct Outcome {
  bool ok = false;
  bool resumed = false;
  long verify = X509_V_OK;
};
Outcome handshake(SSL* client, const Server& server, const ClientContext* keep = nullptr,
                  const std::string& key = {}) {
  SSL* srv = SSL_new(server.ctx());
  SSL_set_accept_state(srv);
  BIO *cb = nullptr, *sb = nullptr;
  BIO_new_bio_pair(&cb, 0, &sb, 0);
  SSL_set_bio(client, cb, cb);
  SSL_set_bio(srv, sb, sb);
  int c = 0, s = 0;
  for (int i = 0; i < 50 && (c != 1 || s != 1); ++i) {
    if (c != 1) {
      c = SSL_do_handshake(client);
      if (c != 1 && SSL_get_error(client, c) != SSL_ERROR_WANT_READ) {
        break;
      }
    }
    if (s != 1) {
      s = SSL_do_handshake(srv);
      if (s != 1 && SSL_get_error(srv, s) != SSL_ERROR_WANT_READ) {
        break;
      }
    }
  }
  Outcome o;
  o.ok = c == 1 && s == 1;
  o.verify = SSL_get_verify_result(client);
  if (o.ok) {
    char byte;
    SSL_read(client, &byte, 1);  // takes the tickets in; no application data follows
    o.resumed = SSL_session_reused(client) == 1;
    if (keep != nullptr) {
      EXPECT_TRUE(keep->keep_session(key, client));
    }
  }
  ERR_clear_error();
  SSL_free(client);
  SSL_free(srv);
  return o;
}

std::shared_ptr<ClientContext> context(bool verify, size_t max_sessions = 4096) {
  ClientContext::Options o;
  o.verify = verify;
  if (verify) {
    o.ca_pem = {read_file(testdata("cert.pem"))};  // self-signed: its own CA
  }
  o.max_sessions = max_sessions;
  auto c = ClientContext::create(o);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return std::move(c).value();
}

TEST(ClientContext, IpLiterals) {
  for (const char* ip : {"127.0.0.1", "::1", "[::1]", "2001:db8::5", "[2001:db8::5]"}) {
    EXPECT_TRUE(is_ip_literal(ip)) << ip;
  }
  for (const char* name :
       {"", "a.com", "localhost", "1.2.3", "1.2.3.4.5", "[a.com]", "1.2.3.4:80", "[::1", "::g"}) {
    EXPECT_FALSE(is_ip_literal(name)) << name;
  }
}

// RFC 6066: SNI carries a host name, never an address; verification checks either.
TEST(ClientContext, ServerNameIsSentForNamesOnly) {
  auto ctx = context(true);
  struct Case {
    const char* name;
    const char* sni;   // nullptr: none sent
    const char* host;  // the DNS name verified, or nullptr
    const char* ip;    // the address verified, or nullptr
  } cases[] = {
      {"api.example", "api.example", "api.example", nullptr},
      {"127.0.0.1", nullptr, nullptr, "127.0.0.1"},
      {"[::1]", nullptr, nullptr, "0:0:0:0:0:0:0:1"},
      {"", nullptr, nullptr, nullptr},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SSL* ssl = ctx->new_ssl(c.name, "");
    ASSERT_NE(ssl, nullptr);
    const char* sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    EXPECT_EQ(sni == nullptr ? std::string("(none)") : std::string(sni),
              c.sni == nullptr ? std::string("(none)") : std::string(c.sni));
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    const char* host = X509_VERIFY_PARAM_get0_host(param, 0);
    EXPECT_EQ(host == nullptr ? std::string("(none)") : std::string(host),
              c.host == nullptr ? std::string("(none)") : std::string(c.host));
    char* ip = X509_VERIFY_PARAM_get1_ip_asc(param);
    EXPECT_EQ(ip == nullptr ? std::string("(none)") : std::string(ip),
              c.ip == nullptr ? std::string("(none)") : std::string(c.ip));
    OPENSSL_free(ip);
    SSL_free(ssl);
  }
  // Without verification the name is still sent, and nothing is checked.
  SSL* ssl = context(false)->new_ssl("api.example", "");
  EXPECT_STREQ(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), "api.example");
  EXPECT_EQ(X509_VERIFY_PARAM_get0_host(SSL_get0_param(ssl), 0), nullptr);
  SSL_free(ssl);
}

TEST(ClientContext, VerifiesTheChainAndTheName) {
  Server server;
  auto verify = context(true);
  EXPECT_TRUE(handshake(verify->new_ssl("test.example", ""), server).ok);
  Outcome wrong_name = handshake(verify->new_ssl("other.example", ""), server);
  EXPECT_FALSE(wrong_name.ok);
  EXPECT_EQ(wrong_name.verify, X509_V_ERR_HOSTNAME_MISMATCH);
  // A CA that did not sign it: refused.
  ClientContext::Options o;
  o.verify = true;
  o.ca_pem = {read_file(testdata("other_cert.pem"))};
  auto other = ClientContext::create(o);
  ASSERT_TRUE(other.is_ok());
  Outcome untrusted = handshake((*other)->new_ssl("test.example", ""), server);
  EXPECT_FALSE(untrusted.ok);
  EXPECT_NE(untrusted.verify, X509_V_OK);
  // verify off (APISIX's default): any certificate, any name.
  EXPECT_TRUE(handshake(context(false)->new_ssl("other.example", ""), server).ok);
  // A CA text that holds no certificate is refused when the context is made.
  o.ca_pem = {"not a certificate"};
  EXPECT_FALSE(ClientContext::create(o).is_ok());
}

TEST(ClientContext, KeptSessionsResumeUnderTheirKey) {
  Server server;
  auto ctx = context(true);
  Outcome first = handshake(ctx->new_ssl("test.example", "10.0.0.1:443|a"), server, ctx.get(),
                            "10.0.0.1:443|a");
  ASSERT_TRUE(first.ok);
  EXPECT_FALSE(first.resumed);
  EXPECT_EQ(ctx->session_count(), 1u);
  EXPECT_TRUE(handshake(ctx->new_ssl("test.example", "10.0.0.1:443|a"), server).resumed);
  EXPECT_FALSE(handshake(ctx->new_ssl("test.example", "10.0.0.2:443|a"), server).resumed);
}

// Keys may come from clients' Host headers: the map keeps the newest `max_sessions`.
TEST(ClientContext, TheOldestSessionGoesWhenFull) {
  Server server;
  auto ctx = context(false, 2);
  for (const char* key : {"k1", "k2", "k3"}) {
    ASSERT_TRUE(handshake(ctx->new_ssl("test.example", key), server, ctx.get(), key).ok);
  }
  EXPECT_EQ(ctx->session_count(), 2u);
  EXPECT_FALSE(handshake(ctx->new_ssl("test.example", "k1"), server).resumed);
  EXPECT_TRUE(handshake(ctx->new_ssl("test.example", "k2"), server).resumed);
  EXPECT_TRUE(handshake(ctx->new_ssl("test.example", "k3"), server).resumed);
}

}  // namespace
}  // namespace sluice::tls
