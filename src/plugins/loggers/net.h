#pragma once
// Blocking connections for the loggers' sender threads (never a worker): TCP, optionally TLS,
// and UDP, each step bounded by the sink's timeout. Error texts follow APISIX's loggers
// ("failed to connect to host[h] port[p] ...").

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::plugins::loggers {

// A client TLS setting: verification on or off, the system's CA store.
// Thread: the sender (one per sink)
class TlsClient {
 public:
  explicit TlsClient(bool verify);
  ~TlsClient();
  SSL_CTX* ctx() const { return ctx_; }
  bool verify() const { return verify_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  bool verify_ = false;
};

// Thread: the sender
class Conn {
 public:
  ~Conn();
  // Connects to host:port (resolved now) within `timeout_ms`, with TLS when `tls` is set
  // (`sni`: the server name sent and verified; empty: `host` unless it is an IP literal).
  static common::StatusOr<std::unique_ptr<Conn>> open(const std::string& host, uint16_t port,
                                                      bool udp, TlsClient* tls,
                                                      const std::string& sni, uint64_t timeout_ms);
  // Everything written (a datagram for UDP), or an error.
  common::Status write_all(std::string_view data);
  // Up to `n` bytes; 0 when the peer closed; an error on a timeout or a reset.
  common::StatusOr<size_t> read(char* buf, size_t n);
  // The peer closed or sent something unasked (a kept-alive connection to drop).
  bool stale() const;

 private:
  Conn() = default;
  common::Status wait(bool for_write);
  common::Status handshake(TlsClient* tls, const std::string& name);

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  uint64_t timeout_ms_ = 3000;
};

}  // namespace sluice::plugins::loggers
