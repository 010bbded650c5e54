#pragma once
// The built-in upstream: a fast HTTP/1.1 server answering every request with one fixed body,
// optionally a single FIFO server of known capacity. Used by `sluice bench upstream` and by
// tests that need a real peer.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/upstream_options.h"
#include "common/status.h"
#include "io/socket.h"

namespace sluice::bench {

// The response bytes, built once.
// Thread: any (immutable)
struct UpstreamResponses {
  explicit UpstreamResponses(const std::string& body);
  std::string keep_alive;     // HTTP/1.1 default: no Connection header
  std::string close;          // Connection: close
  std::string keep_alive_10;  // Connection: keep-alive, for HTTP/1.0 clients that asked
  std::string bad_request;    // 400 with Connection: close, body included
  std::string body;
};

// One FIFO server shared by all threads: request n completes at
// max(its arrival, completion of request n-1) + service time.
// Thread: any
class ServiceClock {
 public:
  explicit ServiceClock(uint64_t service_ns) : service_ns_(service_ns) {}
  uint64_t complete_at(uint64_t arrival_ns) {
    uint64_t prev = last_done_.load(std::memory_order_relaxed);
    uint64_t done;
    do {
      done = (arrival_ns > prev ? arrival_ns : prev) + service_ns_;
    } while (!last_done_.compare_exchange_weak(prev, done, std::memory_order_relaxed));
    return done;
  }

 private:
  const uint64_t service_ns_;
  std::atomic<uint64_t> last_done_{0};
};

class UpstreamWorker;

// Owns the listening socket and the worker threads.
// Thread: control
class Upstream {
 public:
  // Binds (SO_REUSEADDR, backlog 4096) and starts options.threads workers.
  static common::StatusOr<std::unique_ptr<Upstream>> start(const UpstreamOptions& options);
  ~Upstream();
  Upstream(const Upstream&) = delete;
  Upstream& operator=(const Upstream&) = delete;

  const io::SockAddr& address() const { return bound_; }  // with the real port
  uint16_t port() const { return bound_.port(); }
  // Stops and joins the workers, closing every connection. Idempotent.
  void stop();

 private:
  Upstream() = default;

  io::SockAddr bound_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::unique_ptr<UpstreamResponses> responses_;
  std::unique_ptr<ServiceClock> clock_;
  std::vector<std::unique_ptr<UpstreamWorker>> workers_;
  std::vector<std::thread> threads_;
};

}  // namespace sluice::bench
