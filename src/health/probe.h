#pragma once
// One active probe of one node (a state machine): connect; for https a TLS handshake; for
// http(s) send a GET and read the status line. It ends with one Result, or at its deadline.

#include <openssl/ssl.h>

#include <cstdint>
#include <functional>
#include <string>

#include "health/set.h"
#include "io/event_loop.h"

namespace sluice::health {

enum class Result { kSuccess, kHttpFailure, kTcpFailure, kTimeout, kIgnored };

// Thread: the checker's
class Probe : public io::IoHandler {
 public:
  using Done = std::function<void(Result)>;
  // `tls` is used for https probes only.
  Probe(io::EventLoop& loop, SSL_CTX* tls, const Set& set, size_t node, Done done);
  ~Probe() override;
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  void start();
  // Stops without reporting (the set was dropped).
  void cancel() {
    state_ = State::kDone;
    close_all();
  }
  void on_io(uint32_t events) override;

 private:
  enum class State { kConnect, kHandshake, kSend, kRead, kDone };

  void advance();
  bool begin_tls();
  // The next step; false when it must wait for readiness or the probe ended.
  bool step_handshake();
  bool step_send();
  bool step_read();
  Result classify_status_line();
  void finish(Result r);
  void close_all();
  static void on_deadline(void* self) { static_cast<Probe*>(self)->finish(Result::kTimeout); }

  io::EventLoop& loop_;
  SSL_CTX* tls_ctx_;
  const ActiveChecks& conf_;
  const Target& target_;
  Done done_;
  State state_ = State::kConnect;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string out_;
  size_t sent_ = 0;
  std::string in_;
  io::Timer deadline_{&Probe::on_deadline, this};
};

// The request an http(s) probe sends (HTTP/1.0, Connection: close).
std::string probe_request(const ActiveChecks& conf, const Target& target);

}  // namespace sluice::health
