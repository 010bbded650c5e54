#include "health/set.h"

#include "common/log.h"

namespace sluice::health {

namespace {

const char* kind_name(Failure kind) {
  switch (kind) {
    case Failure::kHttp:
      return "http";
    case Failure::kTcp:
      return "tcp";
    case Failure::kTimeout:
      return "timeout";
  }
  return "?";
}

int active_threshold(const ActiveChecks& a, Failure kind) {
  switch (kind) {
    case Failure::kHttp:
      return a.unhealthy.http_failures;
    case Failure::kTcp:
      return a.unhealthy.tcp_failures;
    case Failure::kTimeout:
      return a.unhealthy.timeouts;
  }
  return 0;
}

int passive_threshold(const PassiveChecks& p, Failure kind) {
  switch (kind) {
    case Failure::kHttp:
      return p.unhealthy.http_failures;
    case Failure::kTcp:
      return p.unhealthy.tcp_failures;
    case Failure::kTimeout:
      return p.unhealthy.timeouts;
  }
  return 0;
}

}  // namespace

Set::Set(std::string name, std::shared_ptr<const Checks> checks, std::vector<Target> targets)
    : name_(std::move(name)),
      checks_(std::move(checks)),
      targets_(std::move(targets)),
      nodes_(std::make_unique<NodeState[]>(targets_.size())) {
  for (size_t i = 0; i < targets_.size() && i < 64; ++i) {
    if (targets_[i].pickable) {
      pickable_ |= uint64_t{1} << i;
    }
  }
}

void Set::report_status(int node, int status) {
  const auto& passive = checks_->passive;
  if (!passive || passive->type == ProbeType::kTcp || node < 0 ||
      static_cast<size_t>(node) >= size()) {
    return;
  }
  if (passive->unhealthy.http_statuses.has(status)) {
    count_failure(node, Failure::kHttp, passive->unhealthy.http_failures, "passive");
  } else if (passive->healthy.http_statuses.has(status)) {
    // Passive successes only end a run of failures; bringing a node back is active's job.
    clear_failures(nodes_[node]);
  }
}

void Set::report_failure(int node, Failure kind) {
  const auto& passive = checks_->passive;
  if (!passive || node < 0 || static_cast<size_t>(node) >= size()) {
    return;
  }
  if (kind == Failure::kHttp && passive->type == ProbeType::kTcp) {
    return;
  }
  count_failure(node, kind, passive_threshold(*passive, kind), "passive");
}

void Set::probe_success(size_t node) {
  NodeState& n = nodes_[node];
  clear_failures(n);
  uint32_t got = n.successes.fetch_add(1, std::memory_order_relaxed) + 1;
  int need = checks_->active.healthy.successes;
  if (n.healthy.load(std::memory_order_relaxed) == 0 && need > 0 &&
      got >= static_cast<uint32_t>(need)) {
    set_healthy(node, true, "active check succeeded");
  }
}

void Set::probe_failure(size_t node, Failure kind) {
  count_failure(node, kind, active_threshold(checks_->active, kind), "active");
}

void Set::count_failure(size_t node, Failure kind, int threshold, const char* source) {
  NodeState& n = nodes_[node];
  if (n.successes.load(std::memory_order_relaxed) != 0) {
    n.successes.store(0, std::memory_order_relaxed);
  }
  std::atomic<uint32_t>& counter = kind == Failure::kHttp  ? n.http_failures
                                   : kind == Failure::kTcp ? n.tcp_failures
                                                           : n.timeouts;
  uint32_t got = counter.fetch_add(1, std::memory_order_relaxed) + 1;
  if (threshold > 0 && got >= static_cast<uint32_t>(threshold) &&
      n.healthy.load(std::memory_order_relaxed) != 0) {
    std::string why =
        std::string(source) + " " + kind_name(kind) + " failures: " + std::to_string(got);
    set_healthy(node, false, why.c_str());
  }
}

// Loads first: a healthy node's steady stream of successes writes nothing.
void Set::clear_failures(NodeState& n) {
  for (auto* c : {&n.http_failures, &n.tcp_failures, &n.timeouts}) {
    if (c->load(std::memory_order_relaxed) != 0) {
      c->store(0, std::memory_order_relaxed);
    }
  }
}

void Set::set_healthy(size_t node, bool up, const char* why) {
  NodeState& n = nodes_[node];
  uint8_t expected = up ? 0 : 1;
  if (!n.healthy.compare_exchange_strong(expected, up ? 1 : 0, std::memory_order_acq_rel)) {
    return;  // another thread flipped it first
  }
  n.successes.store(0, std::memory_order_relaxed);
  clear_failures(n);
  sync_mask_bit(node);
  const Target& t = targets_[node];
  if (up) {
    SLUICE_LOG(kInfo, "upstream {}: enable upstream node {}:{} ({})", name_, t.ip, t.port, why);
  } else {
    SLUICE_LOG(kWarn, "upstream {}: disable upstream node {}:{} ({})", name_, t.ip, t.port, why);
  }
}

// Two threads flipping the same node in opposite directions may write the mask out of order;
// each re-reads the flag after its write, so the last writer leaves the mask matching it.
void Set::sync_mask_bit(size_t node) {
  if (node >= 64) {
    return;
  }
  const uint64_t bit = uint64_t{1} << node;
  while (true) {
    uint8_t flag = nodes_[node].healthy.load(std::memory_order_acquire);
    if (flag != 0) {
      down_mask_.fetch_and(~bit, std::memory_order_acq_rel);
    } else {
      down_mask_.fetch_or(bit, std::memory_order_acq_rel);
    }
    if (nodes_[node].healthy.load(std::memory_order_acquire) == flag) {
      return;
    }
  }
}

void Set::inherit(const Set& older) {
  for (size_t i = 0; i < size(); ++i) {
    std::string key = targets_[i].key();
    for (size_t j = 0; j < older.size(); ++j) {
      if (older.targets_[j].key() == key && !older.healthy(j)) {
        nodes_[i].healthy.store(0, std::memory_order_relaxed);
        sync_mask_bit(i);
        break;
      }
    }
  }
}

}  // namespace sluice::health
