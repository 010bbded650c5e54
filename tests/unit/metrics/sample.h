#pragma once
// Samples and render helpers shared by the metrics tests.

#include <string>
#include <string_view>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"

namespace sluice::metrics::testing {

inline HttpSample sample(std::string_view route = "1", int code = 200, double request_ms = 3,
                         double upstream_ms = 2) {
  HttpSample s;
  s.code = code;
  s.labels.route = route;
  s.labels.node = "127.0.0.1";
  s.labels.matched_uri = "/hello";
  s.request_ms = request_ms;
  s.upstream_ms = upstream_ms;
  s.apisix_ms = upstream_ms >= 0 ? request_ms - upstream_ms : request_ms;
  s.ingress_bytes = 100;
  s.egress_bytes = 250;
  return s;
}

inline std::string render_workers(std::initializer_list<const HttpMetrics*> workers) {
  ExpositionInput in;
  in.workers = std::span<const HttpMetrics* const>(workers.begin(), workers.size());
  in.hostname = "gw-1";
  in.version = "3.9.0";
  return render(in);
}

inline size_t count_of(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The status line for sample(route, code) with its count.
inline std::string status_line(std::string_view route, int code, uint64_t n) {
  return "apisix_http_status{code=\"" + std::to_string(code) + "\",route=\"" + std::string(route) +
         "\",matched_uri=\"/hello\",matched_host=\"\",service=\"\",consumer=\"\","
         "node=\"127.0.0.1\"} " +
         std::to_string(n) + "\n";
}

// One latency line of sample(route): `suffix` is "bucket", "sum" or "count".
inline std::string latency_line(std::string_view type, std::string_view suffix, std::string_view le,
                                std::string_view value, std::string_view route = "1") {
  std::string out = "apisix_http_latency_" + std::string(suffix) + "{type=\"" + std::string(type) +
                    "\",route=\"" + std::string(route) +
                    "\",service=\"\",consumer=\"\",node=\"127.0.0.1\"";
  if (!le.empty()) {
    out += ",le=\"" + std::string(le) + "\"";
  }
  return out + "} " + std::string(value) + "\n";
}

}  // namespace sluice::metrics::testing
