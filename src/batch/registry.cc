#include "batch/registry.h"

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "metrics/text_format.h"

namespace sluice::batch {

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A processor, its sink and its sender thread.
// Thread: push side any; the sink only the sender thread
struct Handle::Runner {
  explicit Runner(Settings s, std::unique_ptr<Sink> k) : p(std::move(s)), sink(std::move(k)) {}
  Processor p;
  std::unique_ptr<Sink> sink;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool wake = false, retired = false, stopping = false;  // under mu
  std::atomic<bool> finished{false};
  uint64_t last_error_ms = 0;
  uint64_t drops_logged = 0, last_drop_log_ms = 0;

  void run();
  void send(Batch&& b, bool last_try);
  void log_failure(const std::string& err, size_t n);
  void log_drops();
};

// Workers drop silently (a log line is a write): the sender reports them, once a second.
void Handle::Runner::log_drops() {
  const uint64_t dropped = p.counters().dropped_full.load(std::memory_order_relaxed);
  const uint64_t now = now_ms();
  if (dropped == drops_logged || now - last_drop_log_ms < 1000) {
    return;
  }
  SLUICE_LOG(kError,
             "Batch Processor[{}]: max pending entries limit exceeded, {} entries discarded "
             "(max_pending_entries: {})",
             p.settings().name, dropped - drops_logged, p.settings().max_pending);
  drops_logged = dropped;
  last_drop_log_ms = now;
}

void Handle::Runner::log_failure(const std::string& err, size_t n) {
  const uint64_t now = now_ms();
  if (now - last_error_ms < 1000 && last_error_ms != 0) {
    return;  // one line a second: an outage must not flood the error log
  }
  last_error_ms = now;
  SLUICE_LOG(kError, "Batch Processor[{}] failed to process entries [{}]: {}", p.settings().name, n,
             err);
}

void Handle::Runner::send(Batch&& b, bool last_try) {
  std::string err;
  const bool ok = sink->send(b.entries, &err);
  if (!ok) {
    log_failure(err, b.entries.size());
    if (last_try) {
      b.retry_count = p.settings().max_retry_count;  // no retry at shutdown
    }
  }
  p.done(std::move(b), ok, now_ms());
}

// Sleeps until the processor's next deadline or a full batch; a retired processor sends what
// it holds and ends once it holds nothing; at stop, each batch gets one last try.
void Handle::Runner::run() {
  std::unique_lock lock(mu);
  for (;;) {
    const bool flush = retired || stopping;
    const bool last_try = stopping;
    wake = false;
    lock.unlock();
    Batch b;
    while (p.next(now_ms(), flush, &b)) {
      send(std::move(b), last_try);
    }
    if (last_try) {
      while (p.next(UINT64_MAX, true, &b)) {  // retries waiting: one last try each
        send(std::move(b), true);
      }
    }
    log_drops();
    lock.lock();
    if ((retired || stopping) && p.pending() == 0) {
      break;
    }
    if (stopping) {
      continue;
    }
    const uint64_t at = p.deadline();
    const uint64_t now = now_ms();
    if (at <= now || wake) {
      continue;
    }
    // At most a second asleep: a retire or stop arriving just now is seen soon anyway.
    const uint64_t wait = std::min<uint64_t>(at - now, 1000);
    cv.wait_for(lock, std::chrono::milliseconds(wait), [this] { return wake || stopping; });
  }
  finished.store(true, std::memory_order_release);
}

Handle::~Handle() {
  {
    std::lock_guard lock(r_->mu);
    r_->retired = true;
  }
  r_->cv.notify_one();
}

bool Handle::push(std::string&& entry) { return push(std::move(entry), now_ms()); }

bool Handle::push(std::string&& entry, uint64_t now) {
  bool wake = false;
  const bool ok = r_->p.push(std::move(entry), now, &wake);
  if (wake) {  // once per full batch, not per entry
    {
      std::lock_guard lock(r_->mu);
      r_->wake = true;
    }
    r_->cv.notify_one();
  }
  return ok;
}

const Processor& Handle::processor() const { return r_->p; }

std::shared_ptr<Handle> Registry::start(Settings s, std::unique_ptr<Sink> sink) {
  auto r = std::make_shared<Handle::Runner>(std::move(s), std::move(sink));
  std::lock_guard lock(mu_);
  reap_locked();
  r->thread = std::thread([raw = r.get()] { raw->run(); });
  runners_.push_back(r);
  return std::shared_ptr<Handle>(new Handle(std::move(r)));
}

void Registry::reap_locked() {
  for (auto it = runners_.begin(); it != runners_.end();) {
    Handle::Runner& r = **it;
    if (!r.finished.load(std::memory_order_acquire) || !r.thread.joinable()) {
      ++it;
      continue;
    }
    r.thread.join();
    Totals& t = reaped_[{r.p.settings().name, r.p.settings().route_id}];
    t.dropped_full += r.p.counters().dropped_full.load();
    t.dropped_retry += r.p.counters().dropped_retry.load();
    it = runners_.erase(it);
  }
}

void Registry::stop() {
  std::lock_guard lock(mu_);
  for (auto& r : runners_) {
    {
      std::lock_guard rl(r->mu);
      r->stopping = true;
    }
    r->cv.notify_one();
  }
  // A sink that hangs must not hold the process up: after kStopGraceMs the threads still
  // sending are left to the process's exit, their entries counted as not sent.
  const uint64_t deadline = now_ms() + kStopGraceMs;
  for (auto& r : runners_) {
    while (!r->finished.load(std::memory_order_acquire) && now_ms() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (r->finished.load(std::memory_order_acquire)) {
      r->thread.join();
      continue;
    }
    SLUICE_LOG(kWarn, "Batch Processor[{}]: {} entries not sent at shutdown", r->p.settings().name,
               r->p.pending());
    r->thread.detach();
    // The thread still uses it, possibly past the registry's end: kept for the process's life.
    static auto* abandoned = new std::vector<std::shared_ptr<Handle::Runner>>();
    abandoned->push_back(r);
    r->finished.store(true);
  }
  for (auto it = runners_.begin(); it != runners_.end();) {
    if ((*it)->thread.joinable()) {
      ++it;
    } else {
      it = runners_.erase(it);
    }
  }
}

size_t Registry::size() const {
  std::lock_guard lock(mu_);
  return runners_.size();
}

namespace {

struct Sums {
  uint64_t buffered = 0, pending = 0, dropped_full = 0, dropped_retry = 0;
};

void labels(std::string& out, const std::pair<std::string, std::string>& k) {
  metrics::append_label(out, "name", k.first);
  out.push_back(',');
  metrics::append_label(out, "route_id", k.second);
}

}  // namespace

void Registry::render(std::string& out) const {
  std::map<Key, Sums> sums;
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, t] : reaped_) {
      Sums& s = sums[k];
      s.dropped_full += t.dropped_full;
      s.dropped_retry += t.dropped_retry;
    }
    for (const auto& r : runners_) {
      const Counters& c = r->p.counters();
      Sums& s = sums[{r->p.settings().name, r->p.settings().route_id}];
      s.buffered += c.buffered.load(std::memory_order_relaxed);
      s.pending += r->p.pending();
      s.dropped_full += c.dropped_full.load(std::memory_order_relaxed);
      s.dropped_retry += c.dropped_retry.load(std::memory_order_relaxed);
    }
  }
  if (sums.empty()) {
    return;
  }
  out.append("# HELP apisix_batch_process_entries batch process remaining entries\n");
  out.append("# TYPE apisix_batch_process_entries gauge\n");
  for (const auto& [k, s] : sums) {
    out.append("apisix_batch_process_entries{");
    labels(out, k);
    out.append(",server_addr=\"\"} ").append(std::to_string(s.buffered)).push_back('\n');
  }
  out.append(
      "# HELP sluice_batch_process_pending Entries a batch processor holds: buffered, waiting "
      "for a retry or being sent\n# TYPE sluice_batch_process_pending gauge\n");
  for (const auto& [k, s] : sums) {
    out.append("sluice_batch_process_pending{");
    labels(out, k);
    out.append("} ").append(std::to_string(s.pending)).push_back('\n');
  }
  out.append(
      "# HELP sluice_batch_process_dropped_total Entries a batch processor dropped: its queue "
      "was full, or the sink refused them max_retry_count + 1 times\n"
      "# TYPE sluice_batch_process_dropped_total counter\n");
  for (const auto& [k, s] : sums) {
    for (auto [reason, n] : {std::pair{"queue_full", s.dropped_full},
                             std::pair{"retries_exhausted", s.dropped_retry}}) {
      out.append("sluice_batch_process_dropped_total{");
      labels(out, k);
      out.append(",reason=\"").append(reason).append("\"} ").append(std::to_string(n));
      out.push_back('\n');
    }
  }
}

}  // namespace sluice::batch
