#pragma once
// The typed form of an upstream's `checks` (APISIX's health_checker schema, defaults filled
// in), decoded once on the control thread and shared by the snapshot's health state.

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace sluice::health {

enum class ProbeType { kHttp, kHttps, kTcp };

// HTTP statuses 200..599 as a bit per status (bits below 200 stay clear).
// Thread: any (value type)
class StatusSet {
 public:
  StatusSet() = default;
  StatusSet(std::initializer_list<int> statuses) {
    for (int s : statuses) {
      add(s);
    }
  }
  void add(int s) {
    if (s >= 0 && s < 600) {
      bits_.set(static_cast<size_t>(s));
    }
  }
  bool has(int s) const { return s >= 0 && s < 600 && bits_.test(static_cast<size_t>(s)); }
  bool operator==(const StatusSet&) const = default;

 private:
  std::bitset<600> bits_;
};

// `checks.active`. A threshold of 0 never trips (only passive thresholds may be 0).
// Thread: any (value type)
struct ActiveChecks {
  ProbeType type = ProbeType::kHttp;
  double timeout = 1;  // seconds
  int concurrency = 10;
  std::string host;  // Host header and TLS SNI; empty: the node's host
  int port = 0;      // 0: the node's port
  std::string http_path = "/";
  bool https_verify_certificate = true;
  std::vector<std::string> req_headers;  // "Name: value" lines
  struct Healthy {
    int interval = 1;  // seconds between probes of a healthy node
    StatusSet http_statuses{200, 302};
    int successes = 2;
  } healthy;
  struct Unhealthy {
    int interval = 1;  // seconds between probes of an unhealthy node
    StatusSet http_statuses{429, 404, 500, 501, 502, 503, 504, 505};
    int http_failures = 5;
    int tcp_failures = 2;
    int timeouts = 3;
  } unhealthy;
};

// `checks.passive`: counted from real responses; it can take a node out, never bring it back.
// Thread: any (value type)
struct PassiveChecks {
  ProbeType type = ProbeType::kHttp;
  struct Healthy {
    StatusSet http_statuses{200, 201, 202, 203, 204, 205, 206, 207, 208, 226,
                            300, 301, 302, 303, 304, 305, 306, 307, 308};
    int successes = 5;
  } healthy;
  struct Unhealthy {
    StatusSet http_statuses{429, 500, 503};
    int http_failures = 5;
    int tcp_failures = 2;
    int timeouts = 7;
  } unhealthy;
};

// Thread: any (value type)
struct Checks {
  ActiveChecks active;  // required by APISIX's schema: passive alone cannot bring nodes back
  std::optional<PassiveChecks> passive;
};

}  // namespace sluice::health
