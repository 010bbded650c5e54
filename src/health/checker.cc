#include "health/checker.h"

#include <openssl/err.h>

#include <algorithm>

#include "common/log.h"

namespace sluice::health {

namespace {

constexpr uint64_t kTickMs = 100;  // how late a probe may start after it is due

SSL_CTX* client_ctx(bool verify, const std::string& trusted_ca) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx != nullptr && verify) {
    int ok = trusted_ca.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                : SSL_CTX_load_verify_locations(ctx, trusted_ca.c_str(), nullptr);
    if (ok != 1) {
      // Every https probe that verifies then fails: the node shows unhealthy, and this says why.
      const char* why = ERR_reason_error_string(ERR_get_error());
      ERR_clear_error();
      SLUICE_LOG(kError, "health checks: cannot load the CA bundle {}: {}",
                 trusted_ca.empty() ? "(system)" : trusted_ca, why ? why : "unknown error");
    }
  }
  return ctx;
}

}  // namespace

Checker::Checker(const std::string& trusted_ca)
    : verify_ctx_(client_ctx(true, trusted_ca)), noverify_ctx_(client_ctx(false, {})) {
  thread_ = std::thread([this] {
    loop_.update_time();
    loop_.arm(tick_, kTickMs);
    loop_.run();
    for (auto& e : entries_) {  // probes still out when stopping: closed here, on this thread
      for (Slot& s : e->slots) {
        if (s.probe) {
          s.probe->cancel();
        }
      }
    }
    entries_.clear();
    io::TimerQueue::cancel(tick_);
    loop_.bury();
  });
}

Checker::~Checker() {
  loop_.post([this] { loop_.stop(); });
  thread_.join();
  SSL_CTX_free(verify_ctx_);
  SSL_CTX_free(noverify_ctx_);
}

void Checker::update(std::vector<SetPtr> sets) {
  loop_.post([this, sets = std::move(sets)]() mutable { apply(std::move(sets)); });
}

void Checker::apply(std::vector<SetPtr> sets) {
  std::vector<std::unique_ptr<Entry>> next;
  for (SetPtr& s : sets) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const std::unique_ptr<Entry>& e) { return e && e->set == s; });
    if (it != entries_.end()) {
      next.push_back(std::move(*it));
      continue;
    }
    auto e = std::make_unique<Entry>();
    e->slots.resize(s->size());
    e->set = std::move(s);
    next.push_back(std::move(e));
  }
  for (auto& e : entries_) {
    if (!e) {
      continue;
    }
    for (Slot& slot : e->slots) {
      if (slot.probe) {
        slot.probe->cancel();
        loop_.retire(std::move(slot.probe));
      }
    }
  }
  entries_ = std::move(next);
}

void Checker::on_tick() {
  uint64_t now = loop_.now_ms();
  for (auto& e : entries_) {
    int limit = std::max(1, e->set->checks().active.concurrency);
    for (size_t i = 0; i < e->slots.size() && e->inflight < limit; ++i) {
      Slot& s = e->slots[i];
      if (!s.probe && now >= s.due_ms) {
        start_probe(*e, i);
      }
    }
  }
  loop_.arm(tick_, kTickMs);
}

void Checker::start_probe(Entry& e, size_t node) {
  const ActiveChecks& a = e.set->checks().active;
  SSL_CTX* ctx = a.https_verify_certificate ? verify_ctx_ : noverify_ctx_;
  Entry* ep = &e;
  e.slots[node].probe = std::make_unique<Probe>(
      loop_, ctx, *e.set, node, [this, ep, node](Result r) { finished(*ep, node, r); });
  ++e.inflight;
  e.slots[node].started_ms = loop_.now_ms();
  e.slots[node].probe->start();
}

void Checker::finished(Entry& e, size_t node, Result r) {
  Set& set = *e.set;
  switch (r) {
    case Result::kSuccess:
      set.probe_success(node);
      break;
    case Result::kHttpFailure:
      set.probe_failure(node, Failure::kHttp);
      break;
    case Result::kTcpFailure:
      set.probe_failure(node, Failure::kTcp);
      break;
    case Result::kTimeout:
      set.probe_failure(node, Failure::kTimeout);
      break;
    case Result::kIgnored:
      break;
  }
  const ActiveChecks& a = set.checks().active;
  int interval = set.healthy(node) ? a.healthy.interval : a.unhealthy.interval;
  Slot& s = e.slots[node];
  // Counted from the probe's start: a probe that ran into its deadline does not add its
  // timeout to the interval.
  s.due_ms = s.started_ms + static_cast<uint64_t>(std::max(1, interval)) * 1000;
  --e.inflight;
  loop_.retire(std::move(s.probe));
}

}  // namespace sluice::health
