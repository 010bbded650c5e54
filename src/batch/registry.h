#pragma once
// The batch processors of the process, each with its own sender thread: a sink that hangs
// (a log server that accepts and never answers) holds up only its own batches, never a worker
// nor another logger. The registry renders their metrics and stops them at shutdown.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "batch/processor.h"

namespace sluice::batch {

// How long stop() waits for the processors' last sends.
inline constexpr uint64_t kStopGraceMs = 3000;

class Registry;

// What a plugin instance holds: pushing into its processor. Releasing it retires the
// processor: what it holds is sent at once (retries as configured), then its thread ends.
// Thread: any
class Handle {
 public:
  ~Handle();
  // Never blocks on I/O; false when the entry was dropped (cap reached, counted).
  bool push(std::string&& entry);
  // The same, at `now_ms` (CLOCK_MONOTONIC, as std::chrono::steady_clock) the caller has read.
  bool push(std::string&& entry, uint64_t now_ms);
  const Processor& processor() const;

 private:
  friend class Registry;
  struct Runner;
  explicit Handle(std::shared_ptr<Runner> r) : r_(std::move(r)) {}
  std::shared_ptr<Runner> r_;
};

// Thread: any
class Registry {
 public:
  Registry() = default;
  ~Registry() { stop(); }
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // A new processor sending to `sink`, its thread started.
  std::shared_ptr<Handle> start(Settings s, std::unique_ptr<Sink> sink);
  // Each processor sends what it holds once (no retry), then every thread is joined; one still
  // sending after kStopGraceMs is left behind (logged). Processors started afterwards get a
  // thread again (a plugin reload after a stop is not expected).
  void stop();
  // apisix_batch_process_entries (APISIX's gauge: entries buffered, by name, route_id and
  // server_addr), sluice_batch_process_pending (entries held in all) and
  // sluice_batch_process_dropped_total (by reason: queue_full, retries_exhausted).
  void render(std::string& out) const;
  // Processors (live or draining) now.
  size_t size() const;

 private:
  using Key = std::pair<std::string, std::string>;  // name, route_id
  struct Totals {
    uint64_t dropped_full = 0, dropped_retry = 0;
  };
  void reap_locked();

  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Handle::Runner>> runners_;
  std::map<Key, Totals> reaped_;  // counters of processors whose thread has ended
};

// Milliseconds on the monotonic clock (vDSO: no syscall).
uint64_t now_ms();

}  // namespace sluice::batch
