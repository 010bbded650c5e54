#pragma once
// One load-generator thread: its own epoll loop driving its share of the keep-alive
// connections, closed loop (wrk-like) or open loop on a fixed schedule.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/load_stats.h"
#include "bench/response_reader.h"
#include "bench/start_gate.h"
#include "io/buffer.h"
#include "io/socket.h"

namespace sluice::bench {

// What every load thread does, decided once before they start.
// Thread: any (immutable)
struct LoadPlan {
  io::SockAddr addr;
  std::string request;         // the bytes of one GET
  std::optional<double> rate;  // requests/s over all threads; set = open loop
  int threads = 1;
  uint64_t duration_ns = 0;
  uint64_t timeout_ns = 0;
};

// State machine over its connections (closed -> connecting -> idle <-> busy); this file is
// longer than most because the whole loop reads best in one place.
// Thread: worker
class LoadWorker {
 public:
  // This is thread `index` of plan.threads and owns `connections` connections.
  LoadWorker(const LoadPlan& plan, StartGate& gate, int index, int connections);
  ~LoadWorker();
  LoadWorker(const LoadWorker&) = delete;
  LoadWorker& operator=(const LoadWorker&) = delete;

  // Connects, waits at the gate, runs the duration, drains and returns.
  void run();
  const LoadStats& stats() const { return stats_; }

 private:
  enum class State : uint8_t { kClosed, kConnecting, kIdle, kBusy };
  struct Conn {
    int fd = -1;
    uint32_t gen = 0;  // bumped per socket, so stale epoll events are recognised
    State state = State::kClosed;
    bool in_idle_list = false;
    uint64_t start_ns = 0;     // latency origin of the request in flight
    uint64_t deadline_ns = 0;  // connect or request timeout
    uint64_t retry_ns = 0;     // when a closed connection may reconnect
    size_t written = 0;        // bytes of the request sent
    ResponseReader reader;
    io::Buffer in;
  };

  void connect_phase();
  void loop();
  void begin_stop(uint64_t now);
  void finish(uint64_t now);
  uint64_t next_deadline() const;
  void housekeeping(uint64_t now);

  void open(Conn& c, uint64_t now);
  void close(Conn& c);
  void fail(Conn& c, LoadError e, uint64_t now);
  void on_event(Conn& c, uint32_t events);
  void on_readable(Conn& c);
  void process(Conn& c);
  void complete(Conn& c, uint64_t now);
  void become_idle(Conn& c, uint64_t now);
  void send(Conn& c, uint64_t start_ns, uint64_t now);
  void write_more(Conn& c, uint64_t now);

  bool open_loop() const { return plan_.rate.has_value(); }
  uint64_t intended(uint64_t j) const;  // open loop: when this thread's j-th request is due
  void dispatch(uint64_t now);          // open loop: send what is due on idle connections
  uint32_t index_of(const Conn& c) const { return static_cast<uint32_t>(&c - conns_.data()); }

  const LoadPlan& plan_;
  StartGate& gate_;
  int index_;
  int epfd_ = -1;
  std::vector<Conn> conns_;
  std::vector<uint32_t> idle_;  // open loop: idle connections (lazily pruned)
  LoadStats stats_;
  bool started_ = false;
  bool stopping_ = false;
  uint64_t t0_ = 0;
  uint64_t end_ns_ = 0;
  uint64_t drain_deadline_ = 0;
  uint64_t tick_ns_ = 0;
  uint64_t next_tick_ = 0;
  uint64_t inflight_ = 0;
  uint64_t next_send_ = 0;  // open loop: index of the next request to send
  uint64_t due_ = 0;        // open loop: requests whose time has come
};

}  // namespace sluice::bench
