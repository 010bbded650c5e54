#include "upstream/ewma.h"

#include <algorithm>
#include <cmath>

namespace sluice::upstream {

namespace {

double decay(double ewma, uint64_t touched_ms, double sample, uint64_t now_ms) {
  double td = now_ms > touched_ms ? static_cast<double>(now_ms - touched_ms) / 1000.0 : 0.0;
  double w = std::exp(-td / Ewma::kDecaySeconds);
  return ewma * w + sample * (1.0 - w);
}

}  // namespace

uint64_t Ewma::next_random() {
  // xorshift64: enough to spread picks; not for anything secret.
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  return rng_;
}

double Ewma::score(int node, uint64_t now_ms) const {
  if (static_cast<size_t>(node) >= stats_.size() || !stats_[node].has_data) {
    return 0;
  }
  const Stat& s = stats_[node];
  return decay(s.ewma_ms, s.touched_ms, 0, now_ms);
}

int Ewma::pick(const Upstream& up, const PickArgs& args) {
  const auto& nodes = up.nodes;
  if (stats_.size() != nodes.size()) {
    stats_.assign(nodes.size(), Stat{});
  }
  int top = 0;
  if (!top_priority(up, args.exclude, &top)) {
    return -1;
  }
  auto usable = [&](size_t i) {
    return nodes[i].priority == top && eligible(nodes[i], i, args.exclude);
  };
  size_t count = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    count += usable(i) ? 1 : 0;
  }
  size_t a = next_random() % count;
  size_t b = a;
  if (count > 1) {
    b = next_random() % (count - 1);
    b += b >= a ? 1 : 0;
  }
  // The a-th and b-th usable nodes.
  int na = -1;
  int nb = -1;
  for (size_t i = 0, k = 0; i < nodes.size(); ++i) {
    if (!usable(i)) {
      continue;
    }
    na = k == a ? static_cast<int>(i) : na;
    nb = k == b ? static_cast<int>(i) : nb;
    ++k;
  }
  return score(nb, args.now_ms) < score(na, args.now_ms) ? nb : na;
}

void Ewma::finished(const Upstream& up, int node, Outcome outcome, uint64_t rtt_ms,
                    uint64_t now_ms) {
  if (stats_.size() != up.nodes.size()) {
    stats_.assign(up.nodes.size(), Stat{});
  }
  double sample = static_cast<double>(
      outcome == Outcome::kConnectFailed ? std::max(rtt_ms, kConnectFailureMs) : rtt_ms);
  Stat& s = stats_[node];
  s.ewma_ms = s.has_data ? decay(s.ewma_ms, s.touched_ms, sample, now_ms) : sample;
  s.touched_ms = now_ms;
  s.has_data = true;
}

}  // namespace sluice::upstream
