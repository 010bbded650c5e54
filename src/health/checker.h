#pragma once
// The active health checker: one thread with its own event loop probing every node of every
// checked upstream, each probe non-blocking with its own deadline, so dead nodes with long
// timeouts delay nobody. It is off the workers (they never wait on it) and off the control
// thread (whose loop blocks on SQLite, DNS and snapshot builds, which would skew deadlines).

#include <openssl/ssl.h>

#include <memory>
#include <thread>
#include <vector>

#include "health/probe.h"
#include "health/set.h"
#include "io/event_loop.h"

namespace sluice::health {

// Thread: control (the constructor, update() and the destructor); the probes run on the
// checker's own thread.
class Checker {
 public:
  // `trusted_ca`: the CA bundle https probes with https_verify_certificate check against
  // (apisix.ssl.ssl_trusted_certificate, as APISIX's lua_ssl_trusted_certificate); empty: the
  // system's.
  explicit Checker(const std::string& trusted_ca = {});
  ~Checker();
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  // The sets to probe from now on (the registry's live ones after a publish). A set that stays
  // keeps its schedule; a dropped one has its probes cancelled.
  void update(std::vector<SetPtr> sets);

 private:
  // Thread: the checker's
  struct Slot {
    uint64_t due_ms = 0;
    uint64_t started_ms = 0;
    std::unique_ptr<Probe> probe;  // null when idle
  };
  // Thread: the checker's
  struct Entry {
    SetPtr set;
    std::vector<Slot> slots;
    int inflight = 0;
  };

  void apply(std::vector<SetPtr> sets);
  void on_tick();
  static void tick_cb(void* self) { static_cast<Checker*>(self)->on_tick(); }
  void start_probe(Entry& e, size_t node);
  void finished(Entry& e, size_t node, Result r);

  io::EventLoop loop_;
  io::Timer tick_{&Checker::tick_cb, this};
  std::vector<std::unique_ptr<Entry>> entries_;
  SSL_CTX* verify_ctx_ = nullptr;
  SSL_CTX* noverify_ctx_ = nullptr;
  std::thread thread_;
};

}  // namespace sluice::health
