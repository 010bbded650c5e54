#include "batch/processor.h"

#include <algorithm>
#include <limits>

namespace sluice::batch {

Processor::Processor(Settings s) : s_(std::move(s)) {
  buffer_.reserve(std::min<size_t>(s_.batch_max_size, s_.max_pending));
}

bool Processor::push(std::string&& entry, uint64_t now_ms, bool* wake) {
  std::lock_guard lock(mu_);
  if (pending_ >= s_.max_pending ||
      (s_.max_pending_bytes != 0 && pending_bytes_ + entry.size() > s_.max_pending_bytes)) {
    c_.dropped_full.fetch_add(1, std::memory_order_relaxed);
    *wake = false;
    return false;
  }
  if (buffer_.empty()) {
    first_ms_ = now_ms;
  }
  last_ms_ = now_ms;
  pending_bytes_ += entry.size();
  buffer_.push_back(std::move(entry));
  ++pending_;
  c_.buffered.store(buffer_.size(), std::memory_order_relaxed);
  *wake = buffer_.size() >= s_.batch_max_size;
  return true;
}

void Processor::cut_locked(bool all) {
  // The sender may wake after workers pushed past batch_max_size: batches never exceed it, and
  // unless the buffer is due, the entries past the last full batch stay buffered.
  const size_t max = s_.batch_max_size;
  const size_t n = all ? buffer_.size() : buffer_.size() / max * max;
  if (n == 0) {
    return;
  }
  if (n == buffer_.size() && n <= max) {
    batches_.push_back(Batch{std::move(buffer_)});
    buffer_ = {};
  } else {
    for (size_t i = 0; i < n; i += max) {
      Batch b;
      const size_t end = std::min(n, i + max);
      b.entries.reserve(end - i);
      for (size_t j = i; j < end; ++j) {
        b.entries.push_back(std::move(buffer_[j]));
      }
      batches_.push_back(std::move(b));
    }
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(n));
    first_ms_ = last_ms_;  // the rest came after the cut batches' first: a lower bound
  }
  // The next batch's room, taken here on the sender rather than by a worker's push.
  buffer_.reserve(std::min<size_t>(s_.batch_max_size, s_.max_pending));
  c_.buffered.store(buffer_.size(), std::memory_order_relaxed);
}

bool Processor::next(uint64_t now_ms, bool flush, Batch* out) {
  std::lock_guard lock(mu_);
  if (!buffer_.empty()) {
    const bool due = flush || now_ms - last_ms_ >= s_.inactive_timeout_ms ||
                     now_ms - first_ms_ >= s_.buffer_duration_ms;
    if (due || buffer_.size() >= s_.batch_max_size) {
      cut_locked(due);
    }
  }
  for (auto it = batches_.begin(); it != batches_.end(); ++it) {
    if (flush || it->due_ms <= now_ms) {
      *out = std::move(*it);
      batches_.erase(it);
      return true;  // still counted in pending_ until done()
    }
  }
  return false;
}

void Processor::done(Batch&& b, bool ok, uint64_t now_ms) {
  const size_t n = b.entries.size();
  size_t bytes = 0;
  for (const std::string& e : b.entries) {
    bytes += e.size();
  }
  if (ok) {
    c_.sent.fetch_add(n, std::memory_order_relaxed);
  } else if (++b.retry_count <= s_.max_retry_count) {
    b.due_ms = now_ms + s_.retry_delay_ms;
    std::lock_guard lock(mu_);
    batches_.push_back(std::move(b));
    return;
  } else {
    c_.dropped_retry.fetch_add(n, std::memory_order_relaxed);
  }
  std::lock_guard lock(mu_);
  pending_ -= std::min(pending_, n);
  pending_bytes_ -= std::min(pending_bytes_, bytes);
}

uint64_t Processor::deadline() const {
  std::lock_guard lock(mu_);
  uint64_t at = std::numeric_limits<uint64_t>::max();
  if (!buffer_.empty()) {
    if (buffer_.size() >= s_.batch_max_size) {
      return 0;
    }
    at = std::min(last_ms_ + s_.inactive_timeout_ms, first_ms_ + s_.buffer_duration_ms);
  }
  for (const Batch& b : batches_) {
    at = std::min(at, b.due_ms);
  }
  return at;
}

size_t Processor::pending() const {
  std::lock_guard lock(mu_);
  return pending_;
}

}  // namespace sluice::batch
