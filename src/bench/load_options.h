#pragma once
// `sluice bench load` options: the command line parsed and checked once, and the target URL
// resolved to an address and a ready-made request.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "io/socket.h"

namespace sluice::bench {

// Where the load goes: an http:// URL to an IP literal or localhost.
// Thread: any (immutable)
struct Target {
  io::SockAddr addr;
  std::string authority;  // host[:port] exactly as in the URL, for the Host header
  std::string path;       // origin-form request target, "/" at least
};

// Parses http://HOST[:PORT][/PATH][?QUERY]; HOST is an IPv4 literal, a bracketed IPv6
// literal or `localhost` (127.0.0.1). Anything else is an error saying why.
common::StatusOr<Target> parse_url(std::string_view url);

// Thread: any (immutable once parsed)
struct LoadOptions {
  std::string url;
  int connections = 16;
  double duration_s = 5;
  int threads = 1;
  std::optional<double> rate;  // requests/s across all threads; set = open loop
  uint64_t timeout_ms = 2000;
  std::vector<std::string> headers;  // "Name: value"
  std::string host;                  // Host header; empty = the URL's authority
};

// Parses the arguments after `bench load`. The error text names the offending argument.
common::StatusOr<LoadOptions> parse_load_args(const std::vector<std::string>& args);

// The GET request every connection sends, bytes on the wire.
std::string build_request(const LoadOptions& options, const Target& target);

inline constexpr const char* kLoadUsage =
    "usage: sluice bench load --url http://127.0.0.1:PORT/path [-c 16] [-d 5] [--threads 1]\n"
    "                         [--rate R] [--timeout-ms 2000] [--header 'Name: value']...\n"
    "                         [--host H]\n"
    "  -c, --connections N   keep-alive connections, one request in flight on each\n"
    "  -d, --duration S      seconds to send for\n"
    "  -t, --threads N       event-loop threads; connections are divided among them\n"
    "  --rate R              open loop: R requests/s in total, latency from the intended\n"
    "                        send time; without it the loop is closed (like wrk)\n"
    "  --timeout-ms N        per request (and per connect) timeout\n"
    "  -H, --header H        extra request header, repeatable\n"
    "  --host H              Host header (default: from the URL)\n"
    "Prints one JSON object on stdout.\n";

}  // namespace sluice::bench
