#pragma once
// Client-facing limits and timeouts, fixed when the workers start.

#include <cstdint>
#include <memory>
#include <string>

#include "accesslog/config.h"
#include "codec/h1/parser.h"
#include "server/admin_hook.h"
#include "server/h2_limits.h"
#include "server/real_ip.h"

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
  // The Admin API's control-thread side. Null: no Admin API; no admin listener may be added
  // and /apisix/admin on a proxy port is routed like any other path.
  std::shared_ptr<AdminHandler> admin;
  // Trusted proxies whose X-Real-IP / X-Forwarded-For name the client (nginx's realip).
  RealIpConfig real_ip;
  // How long a connection waits for the admin handler's answer before a 504 and close.
  uint32_t admin_reply_timeout_ms = 60000;
  // apisix.show_upstream_status_in_response_header: X-APISIX-Upstream-Status on every response
  // an upstream was tried for, not only when the last try's status is 5xx.
  bool show_upstream_status = false;
  // Batch socket calls through io_uring where the kernel allows it (io/ring.h).
  bool io_uring = true;
  // The access log (nginx_config.http.access_log*); null when it is off.
  std::shared_ptr<const accesslog::Config> access_log;
  // sluice.http2: what HTTP/2 connections announce and enforce (enable_http2 listeners).
  H2Settings h2;
};

}  // namespace sluice::server
