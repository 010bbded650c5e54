#pragma once
// A batch processor with APISIX's semantics (apisix/utils/batch-processor.lua): entries are
// gathered into a buffer and handed to a sink when the buffer holds batch_max_size entries, when
// no entry came for inactive_timeout, or when the first entry has waited buffer_duration; a
// batch the sink refuses is tried again after retry_delay, up to max_retry_count times, then
// dropped. Beyond APISIX, the entries a processor holds (buffered and in flight) are capped:
// one over the cap is dropped and counted, so a dead or slow sink never grows memory.
//
// Workers only push(): a spin lock held for a vector push into room reserved beforehand by the
// sender (never a syscall), and a wake-up of the sender once per full batch. Everything else runs
// on the processor's sender thread (registry.h), clocked by the caller, so the logic is tested with
// a fake clock.

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace sluice::batch {

// Entries a processor holds at most when plugin_metadata sets no max_pending_entries.
inline constexpr size_t kDefaultMaxPending = 10000;

// Thread: any (immutable)
struct Settings {
  std::string name = "log buffer";  // the metrics' `name` label (APISIX's conf.name)
  std::string route_id;             // the metrics' `route_id` label
  uint32_t batch_max_size = 1000;
  uint64_t inactive_timeout_ms = 5000;
  uint64_t buffer_duration_ms = 60000;
  uint32_t max_retry_count = 0;
  uint64_t retry_delay_ms = 1000;
  size_t max_pending = kDefaultMaxPending;
  size_t max_pending_bytes = 0;  // the entries' bytes held at most; 0: no bound but the count
};

// Where batches go (an HTTP server, a socket, a file). Called on the sender thread only.
// Thread: the processor's sender
class Sink {
 public:
  virtual ~Sink() = default;
  // Sends one batch; false with `*err` set when it did not arrive (the batch is retried).
  virtual bool send(std::span<const std::string> entries, std::string* err) = 0;
};

// One batch on its way to the sink.
// Thread: the processor's sender
struct Batch {
  std::vector<std::string> entries;
  uint32_t retry_count = 0;
  uint64_t due_ms = 0;  // not sent before this time
};

// A test-and-test-and-set lock for the processor's few-instruction critical sections: a
// worker never sleeps in the kernel on it, as it could on a contended mutex.
// Thread: any
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      while (flag_.load(std::memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// Counters a scrape reads; written under the processor's lock or by the sender.
// Thread: any
struct Counters {
  std::atomic<uint64_t> buffered{0};       // in the buffer, not yet a batch (the gauge)
  std::atomic<uint64_t> dropped_full{0};   // refused by push(): the cap was reached
  std::atomic<uint64_t> dropped_retry{0};  // given up after max_retry_count failed tries
  std::atomic<uint64_t> sent{0};           // entries the sink took
};

// Thread: push() any; the other members the sender thread (or a test).
class Processor {
 public:
  explicit Processor(Settings s);

  // Takes `entry` at time `now_ms`; false (and counted) when the cap is reached. Returns
  // through `*wake` whether the sender should run now (a batch is full).
  bool push(std::string&& entry, uint64_t now_ms, bool* wake);

  // Sender side. Moves the buffer into a batch when it is due at `now_ms` (or at once when
  // `flush`); then the first batch whose time has come, if any, is moved to `*out`.
  bool next(uint64_t now_ms, bool flush, Batch* out);
  // The outcome of sending `b` at `now_ms`: a failure is queued again after retry_delay, or
  // dropped past max_retry_count.
  void done(Batch&& b, bool ok, uint64_t now_ms);
  // When next() has something to do, at the earliest; UINT64_MAX: nothing held.
  uint64_t deadline() const;
  // Entries held: buffered, waiting for a retry, or being sent.
  size_t pending() const;

  const Settings& settings() const { return s_; }
  const Counters& counters() const { return c_; }

 private:
  // The buffer (`all`), or its full batch_max_size slices, becomes batches.
  void cut_locked(bool all);

  const Settings s_;
  mutable SpinLock mu_;
  std::vector<std::string> buffer_;
  uint64_t first_ms_ = 0, last_ms_ = 0;
  std::deque<Batch> batches_;  // ready or waiting for a retry, oldest first
  size_t pending_ = 0;         // buffer_ + batches_ + the one being sent
  size_t pending_bytes_ = 0;   // their bytes
  Counters c_;
};

}  // namespace sluice::batch
