#include "health/probe.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace sluice::health {
namespace {

// A one-shot server on loopback: accepts one connection, reads the request head, answers.
// Thread: test
class OneShot {
 public:
  explicit OneShot(std::string answer) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 4);
    thread_ = std::thread([this, answer] {
      int c = accept(fd_, nullptr, nullptr);
      char buf[4096];
      ssize_t n = 0;
      while (request_.find("\r\n\r\n") == std::string::npos &&
             (n = read(c, buf, sizeof(buf))) > 0) {
        request_.append(buf, static_cast<size_t>(n));
      }
      if (!answer.empty()) {
        (void)!write(c, answer.data(), answer.size());
      }
      close(c);
    });
  }
  ~OneShot() {
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }
  const std::string& request() const { return request_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string request_;
  std::thread thread_;
};

// A one-shot TLS server with a fresh self-signed certificate for "localhost".
// Thread: test
class TlsOneShot {
 public:
  explicit TlsOneShot(std::string answer) {
    EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509_sign(cert, key, EVP_sha256());
    ctx_ = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate(ctx_, cert);
    SSL_CTX_use_PrivateKey(ctx_, key);
    X509_free(cert);
    EVP_PKEY_free(key);
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 4);
    thread_ = std::thread([this, answer] {
      int c = accept(fd_, nullptr, nullptr);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        char buf[4096];
        int n = 0;
        while (request_.find("\r\n\r\n") == std::string::npos &&
               (n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
          request_.append(buf, static_cast<size_t>(n));
        }
        SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      close(c);
    });
  }
  ~TlsOneShot() {
    thread_.join();
    close(fd_);
    SSL_CTX_free(ctx_);
  }
  uint16_t port() const { return port_; }
  const std::string& request() const { return request_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string request_;
  std::thread thread_;
};

Target target(uint16_t port) {
  Target t;
  t.ip = "127.0.0.1";
  t.port = port;
  io::make_sockaddr(t.ip, port, &t.addr);
  t.host_header = "127.0.0.1:" + std::to_string(port);
  return t;
}

uint16_t closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);  // bound, never listened: connecting is refused
  return ntohs(a.sin_port);
}

Result run_probe(const Checks& c, uint16_t port, SSL_CTX* tls = nullptr) {
  io::EventLoop loop;
  Set set("u", std::make_shared<const Checks>(c), {target(port)});
  Result got = Result::kIgnored;
  bool done = false;
  Probe p(loop, tls, set, 0, [&](Result r) {
    got = r;
    done = true;
    loop.stop();
  });
  loop.update_time();
  p.start();
  if (!done) {
    loop.run();
  }
  return got;
}

TEST(HealthProbe, HttpStatusesDecide) {
  Checks c;
  c.active.http_path = "/status";
  c.active.req_headers = {"X-Probe: 1"};
  {
    OneShot s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(run_probe(c, s.port()), Result::kSuccess);
    EXPECT_EQ(s.request().rfind("GET /status HTTP/1.0\r\n", 0), 0u) << s.request();
    EXPECT_NE(s.request().find("Host: 127.0.0.1:"), std::string::npos);
    EXPECT_NE(s.request().find("X-Probe: 1\r\n"), std::string::npos);
  }
  {
    OneShot s("HTTP/1.1 503 Busy\r\n\r\n");
    EXPECT_EQ(run_probe(c, s.port()), Result::kHttpFailure);
  }
  {
    OneShot s("HTTP/1.1 418 Teapot\r\n\r\n");  // in neither list
    EXPECT_EQ(run_probe(c, s.port()), Result::kIgnored);
  }
  {
    OneShot s("");  // closes without answering
    EXPECT_EQ(run_probe(c, s.port()), Result::kTcpFailure);
  }
}

TEST(HealthProbe, RefusedConnectIsATcpFailure) {
  Checks c;
  EXPECT_EQ(run_probe(c, closed_port()), Result::kTcpFailure);
  c.active.type = ProbeType::kTcp;
  EXPECT_EQ(run_probe(c, closed_port()), Result::kTcpFailure);
}

TEST(HealthProbe, TcpProbeNeedsOnlyTheConnect) {
  Checks c;
  c.active.type = ProbeType::kTcp;
  OneShot s("");
  EXPECT_EQ(run_probe(c, s.port()), Result::kSuccess);
}

TEST(HealthProbe, SilentServerTimesOut) {
  Checks c;
  c.active.timeout = 0.2;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  listen(fd, 4);  // the kernel accepts; nobody ever answers
  EXPECT_EQ(run_probe(c, ntohs(a.sin_port)), Result::kTimeout);
  close(fd);
}

TEST(HealthProbe, HttpsWithAndWithoutVerification) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  Checks c;
  c.active.type = ProbeType::kHttps;
  c.active.host = "localhost";
  c.active.https_verify_certificate = false;
  {
    TlsOneShot s("HTTP/1.1 302 Found\r\n\r\n");
    EXPECT_EQ(run_probe(c, s.port(), ctx), Result::kSuccess);
    EXPECT_EQ(s.request().rfind("GET / HTTP/1.0\r\nHost: localhost\r\n", 0), 0u) << s.request();
  }
  // Verified against the system CA store, a self-signed certificate fails the handshake.
  SSL_CTX_set_default_verify_paths(ctx);
  c.active.https_verify_certificate = true;
  {
    TlsOneShot s("HTTP/1.1 200 OK\r\n\r\n");
    EXPECT_EQ(run_probe(c, s.port(), ctx), Result::kTcpFailure);
  }
  SSL_CTX_free(ctx);
}

TEST(HealthProbe, HostOverride) {
  ActiveChecks a;
  a.host = "example.com";
  EXPECT_EQ(probe_request(a, target(80)),
            "GET / HTTP/1.0\r\nHost: example.com\r\nUser-Agent: sluice-health-check\r\n"
            "Connection: close\r\n\r\n");
}

}  // namespace
}  // namespace sluice::health
