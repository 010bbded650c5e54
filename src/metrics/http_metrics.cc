#include "metrics/http_metrics.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "metrics/text_format.h"

namespace sluice::metrics {
namespace {

// Writes fields as length-prefixed bytes into buf, reused across requests (it allocates only
// when a key is longer than any before). Length prefixes keep ("a", "bc") and ("ab", "c")
// apart whatever bytes the values hold.
// Thread: the owning worker (stack-local)
class KeyWriter {
 public:
  explicit KeyWriter(std::string& buf) : buf_(buf) {}
  void add(std::string_view f) {
    const auto n = static_cast<uint32_t>(f.size());
    if (buf_.size() < at_ + sizeof(n) + f.size()) {
      buf_.resize(at_ + sizeof(n) + f.size());
    }
    std::memcpy(buf_.data() + at_, &n, sizeof(n));
    if (n != 0) {  // an empty view may have a null data(), which memcpy must not see
      std::memcpy(buf_.data() + at_ + sizeof(n), f.data(), f.size());
    }
    at_ += sizeof(n) + f.size();
  }
  // `count` values (missing ones empty), so every key of a layout has the same fields.
  void add(std::span<const std::string_view> values, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      add(i < values.size() ? values[i] : std::string_view());
    }
  }
  size_t size() const { return at_; }
  std::string_view view() const { return std::string_view(buf_.data(), at_); }

 private:
  std::string& buf_;
  size_t at_ = 0;
};

// ,name="value" for each extra label.
void append_extra(std::string& out, const std::vector<std::string>& names,
                  std::span<const std::string_view> values) {
  for (size_t i = 0; i < names.size(); ++i) {
    out.push_back(',');
    append_label(out, names[i], i < values.size() ? values[i] : std::string_view());
  }
}

std::string status_labels(const HttpSample& s, const HttpLayout& layout) {
  std::string out;
  append_label(out, "code", std::to_string(s.code));
  out.push_back(',');
  append_label(out, "route", s.labels.route);
  out.push_back(',');
  append_label(out, "matched_uri", s.labels.matched_uri);
  out.push_back(',');
  append_label(out, "matched_host", s.labels.matched_host);
  out.push_back(',');
  append_label(out, "service", s.labels.service);
  out.push_back(',');
  append_label(out, "consumer", s.labels.consumer);
  out.push_back(',');
  append_label(out, "node", s.labels.node);
  append_extra(out, layout.status_extra, s.status_extra);
  return out;
}

// route="..",service="..",consumer=".." (Sluice's accounting families).
std::string account_labels(const HttpLabels& l) {
  std::string out;
  append_label(out, "route", l.route);
  out.push_back(',');
  append_label(out, "service", l.service);
  out.push_back(',');
  append_label(out, "consumer", l.consumer);
  return out;
}

std::string route_labels(const HttpLabels& l) {
  std::string out = account_labels(l);
  out.push_back(',');
  append_label(out, "node", l.node);
  return out;
}

}  // namespace

std::shared_ptr<const HttpLayout> HttpMetrics::default_layout() {
  static const auto kDefault = std::make_shared<const HttpLayout>();
  return kDefault;
}

void Histogram::observe(double ms, std::span<const double> bounds) {
  if (!(ms >= 0)) {
    ms = 0;  // NaN or a clock step backwards: count the request, keep the sum a number
  }
  size_t i = 0;
  while (i < bounds.size() && ms > bounds[i]) {
    ++i;
  }
  buckets[i].add(1);
  sum.add(ms);
}

void HttpMetrics::observe_all(RouteSeries& r, const HttpSample& s) const {
  const std::span<const double> bounds(layout_->bounds);
  r.latency[static_cast<size_t>(LatencyType::kRequest)].observe(s.request_ms, bounds);
  if (s.upstream_ms >= 0) {
    r.latency[static_cast<size_t>(LatencyType::kUpstream)].observe(s.upstream_ms, bounds);
  }
  r.latency[static_cast<size_t>(LatencyType::kApisix)].observe(s.apisix_ms, bounds);
  r.ingress_bytes.add(s.ingress_bytes);
  r.egress_bytes.add(s.egress_bytes);
  r.cpu_ns.add(s.cpu_ns);
  r.touched.touch(s.now_ms);
}

void HttpMetrics::sweep(uint64_t now_ms) {
  const uint64_t expire = layout_->expire_ms;
  if (expire == 0) {
    return;
  }
  // Status sets first: a route set idle is only ever pointed at by idle status sets.
  status_.retire_if([&](const StatusSeries& x) { return x.touched.idle(now_ms, expire); });
  routes_.retire_if([&](const RouteSeries& x) { return x.touched.idle(now_ms, expire); });
}

void HttpMetrics::maybe_sweep(uint64_t now_ms) {
  if (now_ms < next_sweep_ms_) {
    return;
  }
  next_sweep_ms_ = now_ms + std::min<uint64_t>(layout_->expire_ms, 1000);
  sweep(now_ms);
}

void HttpMetrics::record(const HttpSample& s) {
  // The status key starts with the route key, so one buffer serves both lookups, and a seen
  // status set, which knows its route set, costs a single hash lookup.
  const HttpLabels& l = s.labels;
  const HttpLayout& layout = *layout_;
  const uint64_t expire = layout.expire_ms;
  if (expire != 0) {
    maybe_sweep(s.now_ms);
  }
  KeyWriter key(key_);
  for (std::string_view f : {l.route, l.service, l.consumer, l.node}) {
    key.add(f);
  }
  key.add(s.latency_extra, layout.latency_extra.size());
  key.add(s.bandwidth_extra, layout.bandwidth_extra.size());
  const size_t route_key_size = key.size();
  key.add(std::string_view(reinterpret_cast<const char*>(&s.code), sizeof(s.code)));
  key.add(l.matched_uri);
  key.add(l.matched_host);
  key.add(s.status_extra, layout.status_extra.size());
  if (StatusSeries* found = status_.find(key.view())) {
    if (!found->touched.idle(s.now_ms, expire)) {
      found->count.add(1);
      found->touched.touch(s.now_ms);
      observe_all(*found->route, s);
      return;
    }
    // Expired (its route set may be gone: not followed). The sample starts a new series, as
    // APISIX's does once the shared dict dropped the old key.
    status_.retire(key.view());
  }
  RouteSeries* route = record_route(s, key.view().substr(0, route_key_size));
  if (route == nullptr || full()) {
    dropped_.add(1);
    return;
  }
  auto fresh = std::make_unique<StatusSeries>();
  fresh->labels = status_labels(s, layout);
  fresh->route = route;
  fresh->count.add(1);
  fresh->touched.touch(s.now_ms);
  status_.publish(key.view(), std::move(fresh));
}

RouteSeries* HttpMetrics::record_route(const HttpSample& s, std::string_view key) {
  if (RouteSeries* found = routes_.find(key)) {
    if (!found->touched.idle(s.now_ms, layout_->expire_ms)) {
      observe_all(*found, s);
      return found;
    }
    routes_.retire(key);  // only idle status sets point at it; none follows the pointer
  }
  if (full()) {
    return nullptr;
  }
  auto fresh = std::make_unique<RouteSeries>();
  fresh->account_labels = account_labels(s.labels);
  const std::string common = route_labels(s.labels);
  fresh->labels = common;
  append_extra(fresh->labels, layout_->latency_extra, s.latency_extra);
  fresh->bandwidth_labels = common;
  append_extra(fresh->bandwidth_labels, layout_->bandwidth_extra, s.bandwidth_extra);
  for (Histogram& h : fresh->latency) {
    h.init(layout_->bounds.size());
  }
  observe_all(*fresh, s);
  RouteSeries* raw = fresh.get();
  routes_.publish(key, std::move(fresh));
  return raw;
}

}  // namespace sluice::metrics
