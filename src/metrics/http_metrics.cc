#include "metrics/http_metrics.h"

#include <cstring>
#include <initializer_list>
#include <memory>

#include "metrics/text_format.h"

namespace sluice::metrics {
namespace {

// Writes the fields as length-prefixed bytes into buf, reused across calls (it allocates only
// when a key is longer than any before), and returns the key. Length prefixes keep ("a", "bc")
// and ("ab", "c") apart whatever bytes the values hold.
std::string_view build_key(std::string& buf, std::initializer_list<std::string_view> fields) {
  size_t total = 0;
  for (std::string_view f : fields) {
    total += sizeof(uint32_t) + f.size();
  }
  if (buf.size() < total) {
    buf.resize(total);
  }
  char* p = buf.data();
  for (std::string_view f : fields) {
    const auto n = static_cast<uint32_t>(f.size());
    std::memcpy(p, &n, sizeof(n));
    if (n != 0) {  // an empty view may have a null data(), which memcpy must not see
      std::memcpy(p + sizeof(n), f.data(), f.size());
    }
    p += sizeof(n) + f.size();
  }
  return std::string_view(buf.data(), total);
}

std::string status_labels(const HttpSample& s) {
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
  return out;
}

std::string route_labels(const HttpLabels& l) {
  std::string out;
  append_label(out, "route", l.route);
  out.push_back(',');
  append_label(out, "service", l.service);
  out.push_back(',');
  append_label(out, "consumer", l.consumer);
  out.push_back(',');
  append_label(out, "node", l.node);
  return out;
}

void observe_all(RouteSeries& r, const HttpSample& s) {
  r.latency[static_cast<size_t>(LatencyType::kRequest)].observe(s.request_ms);
  if (s.upstream_ms >= 0) {
    r.latency[static_cast<size_t>(LatencyType::kUpstream)].observe(s.upstream_ms);
  }
  r.latency[static_cast<size_t>(LatencyType::kApisix)].observe(s.apisix_ms);
  r.ingress_bytes.add(s.ingress_bytes);
  r.egress_bytes.add(s.egress_bytes);
}

}  // namespace

void Histogram::observe(double ms) {
  if (!(ms >= 0)) {
    ms = 0;  // NaN or a clock step backwards: count the request, keep the sum a number
  }
  size_t i = 0;
  while (i < kLatencyBounds.size() && ms > kLatencyBounds[i]) {
    ++i;
  }
  buckets[i].add(1);
  sum.add(ms);
}

void HttpMetrics::record(const HttpSample& s) {
  // The status key starts with the route key, so one buffer serves both lookups, and a seen
  // status set, which knows its route set, costs a single hash lookup.
  const HttpLabels& l = s.labels;
  const std::string_view code(reinterpret_cast<const char*>(&s.code), sizeof(s.code));
  const std::string_view key = build_key(
      key_, {l.route, l.service, l.consumer, l.node, code, l.matched_uri, l.matched_host});
  const size_t route_key_size =
      4 * sizeof(uint32_t) + l.route.size() + l.service.size() + l.consumer.size() + l.node.size();
  if (StatusSeries* found = status_.find(key)) {
    found->count.add(1);
    observe_all(*found->route, s);
    return;
  }
  RouteSeries* route = record_route(s, key.substr(0, route_key_size));
  if (route == nullptr || full()) {
    dropped_.add(1);
    return;
  }
  auto fresh = std::make_unique<StatusSeries>();
  fresh->labels = status_labels(s);
  fresh->route = route;
  fresh->count.add(1);
  status_.publish(key, std::move(fresh));
}

RouteSeries* HttpMetrics::record_route(const HttpSample& s, std::string_view key) {
  if (RouteSeries* found = routes_.find(key)) {
    observe_all(*found, s);
    return found;
  }
  if (full()) {
    return nullptr;
  }
  auto fresh = std::make_unique<RouteSeries>();
  fresh->labels = route_labels(s.labels);
  observe_all(*fresh, s);
  RouteSeries* raw = fresh.get();
  routes_.publish(key, std::move(fresh));
  return raw;
}

}  // namespace sluice::metrics
