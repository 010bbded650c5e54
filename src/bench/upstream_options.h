#pragma once
// `sluice bench upstream` options: where to listen, what to answer, and how slowly.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "io/socket.h"

namespace sluice::bench {

// Thread: any (immutable once parsed)
struct UpstreamOptions {
  io::SockAddr listen;  // port 0 = any free port
  std::string body = "hello world\n";
  uint64_t service_us = 0;  // > 0: one FIFO server of capacity 1e6/service_us requests/s
  int threads = 1;
};

// Parses the arguments after `bench upstream`; the default address is 127.0.0.1:0.
common::StatusOr<UpstreamOptions> parse_upstream_args(const std::vector<std::string>& args);

// Parses IPv4:PORT or [IPv6]:PORT (numeric only).
common::StatusOr<io::SockAddr> parse_listen(std::string_view text);

// Interprets \n \r \t \\ in --body; any other backslash sequence is an error.
common::StatusOr<std::string> unescape_body(std::string_view text);

// "1.2.3.4:80" or "[::1]:80".
std::string address_text(const io::SockAddr& addr);

inline constexpr const char* kUpstreamUsage =
    "usage: sluice bench upstream [--listen 127.0.0.1:PORT] [--body 'hello world\\n']\n"
    "                             [--service-us N] [--threads 1]\n"
    "  --listen ADDR:PORT  numeric address to listen on (port 0: any free port)\n"
    "  --body TEXT         response body; \\n \\r \\t \\\\ are interpreted\n"
    "  --service-us N      act as one FIFO server taking N us per request (capacity\n"
    "                      1e6/N requests/s over all connections); 0 answers at once\n"
    "  --threads N         event-loop threads sharing the listening socket\n"
    "Answers every request with 200 and the body; prints 'listening on ADDR:PORT' on stderr;\n"
    "exits 0 on SIGTERM or SIGINT.\n";

}  // namespace sluice::bench
