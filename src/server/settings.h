#pragma once
// Client-facing limits and timeouts, fixed when the workers start.

#include <cstdint>
#include <string>

#include "codec/h1/parser.h"

namespace sluice::server {

// Thread: any (immutable)
struct Settings {
  h1::Limits limits;
  uint32_t header_timeout_ms = 60000;
  uint32_t body_timeout_ms = 60000;
  uint32_t send_timeout_ms = 10000;
  uint32_t keepalive_timeout_ms = 60000;
  uint32_t linger_ms = 2000;            // how long a rejected client's leftover bytes are drained
  uint64_t client_max_body_size = 0;    // 0 = unlimited
  uint32_t worker_connections = 10620;  // open client connections per worker
  std::string server_header;            // "Server: sluice/x.y.z\r\n", or empty
  size_t read_buffer = 16384;
  size_t max_read_buffer = 65536;  // head limit plus slack
};

}  // namespace sluice::server
