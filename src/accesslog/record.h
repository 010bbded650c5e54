#pragma once
// What the access log knows of one request when its line is written: the request head's values
// kept while the head was there (Captured), the upstream tries as they went (Tries), and the
// rest, filled by the server from the request's objects at its end (Record).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "accesslog/format.h"
#include "router/expr.h"

namespace sluice::accesslog {

// The head variables of a format for one request (Format::head_vars(), in order). Its buffers
// keep their capacity across requests.
// Thread: worker
class Captured {
 public:
  void clear() {
    bytes_.clear();
    slots_.clear();
  }
  // Evaluates every head variable of `f` against `m` (whose `req` must be set). `raw_head`:
  // the bytes the head was parsed from, for $request's line as sent (empty: rebuilt).
  void capture(const Format& f, const router::MatchContext& m, std::string_view raw_head);
  // The value of head variable `slot`; false when it was not there (or nothing was captured).
  bool get(size_t slot, std::string_view* out) const;

 private:
  struct Slot {
    uint32_t begin = 0, size = 0;
    bool found = false;
  };
  void put(bool found, std::string_view value);

  std::string bytes_;
  std::vector<Slot> slots_;
};

// One upstream try: its node and how far it got. Times are milliseconds since the try began;
// -1: it did not get there.
// Thread: worker
struct UpstreamTry {
  std::string_view addr;  // "ip:port" (a view into the pinned snapshot)
  int status = 0;         // 0: no status (nginx prints "-")
  uint64_t start_ms = 0;
  int64_t connect_ms = -1, header_ms = -1, response_ms = -1;
};

// The tries of one request, in order, as nginx's $upstream_* lists them. Kept by the exchange;
// its vector keeps its capacity across requests.
// Thread: worker
class Tries {
 public:
  void clear() { tries_.clear(); }
  void start(std::string_view addr, uint64_t now_ms) { tries_.push_back({addr, 0, now_ms}); }
  void connected(uint64_t now_ms) {
    if (!tries_.empty() && tries_.back().connect_ms < 0) {
      tries_.back().connect_ms = static_cast<int64_t>(now_ms - tries_.back().start_ms);
    }
  }
  void header(int status, uint64_t now_ms) {
    if (!tries_.empty()) {
      tries_.back().status = status;
      tries_.back().header_ms = static_cast<int64_t>(now_ms - tries_.back().start_ms);
    }
  }
  // A try that failed without a status of its own (502 on an error, 504 on a timeout).
  void failed(int status) {
    if (!tries_.empty() && tries_.back().status == 0) {
      tries_.back().status = status;
    }
  }
  void end(uint64_t now_ms) {
    if (!tries_.empty() && tries_.back().response_ms < 0) {
      tries_.back().response_ms = static_cast<int64_t>(now_ms - tries_.back().start_ms);
    }
  }
  std::span<const UpstreamTry> all() const { return tries_; }

 private:
  std::vector<UpstreamTry> tries_;
};

// One request's line, as the server knows it at the request's end. Views stay valid until the
// line is rendered (Writer::log).
// Thread: worker (stack-local)
struct Record {
  // The connection's variables: remote_addr (after real-ip), server_port, tls. `req` is null:
  // head variables come from `head`.
  router::MatchContext conn;
  const Captured* head = nullptr;  // null: every head variable is "not there"
  uint16_t remote_port = 0;
  std::string_view server_addr;
  int status = 0;
  uint64_t body_bytes_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t request_length = 0;
  uint64_t request_ms = 0;  // from the request head to the end of the response
  std::span<const UpstreamTry> tries;
  bool upstream_tls = false;  // $upstream_scheme https
  // $upstream_host: the Host the last try sent; unset: the client's ($http_host), as APISIX.
  bool has_upstream_host = false;
  std::string_view upstream_host;
  std::string_view upstream_uri;  // what a plugin set (proxy-rewrite); APISIX's is "" otherwise
  std::string_view route_id, route_name, service_id, service_name, consumer_name;
  std::string_view request_id;  // the request-id plugin's; empty: one is made for the line
};

}  // namespace sluice::accesslog
