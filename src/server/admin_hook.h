#pragma once
// How a worker hands an Admin API request to the control thread. A request on an admin
// listener (deployment.admin.admin_listen), or under /apisix/admin on a proxy listener, is
// read whole (head and body) by the worker and submitted here; the answer comes back through
// the reply callback and is written by the worker that owns the connection. Workers never run
// admin logic and never touch the store.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "router/ip.h"

namespace sluice::server {

// Thread: any (value type)
struct AdminRequest {
  std::string method;  // "GET", "PUT", ... as received
  std::string path;    // the request target up to '?', not percent-decoded
  std::string query;   // after '?', not decoded; empty when absent
  // Every request header, names lower-cased, in arrival order.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // the whole body (de-chunked)
  std::string peer_ip;
  router::IpAddr peer;
  bool on_proxy_port = false;  // arrived under /apisix/admin on a node_listen port
};

// Thread: any (value type)
struct AdminResponse {
  int status = 200;
  std::string body;  // sent with Content-Type: application/json unless a header says otherwise
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (X-API-VERSION)
};

// Thread: any
class AdminHandler {
 public:
  virtual ~AdminHandler() = default;
  // Called on a worker thread. `reply` is called exactly once, on any thread, possibly after
  // the connection is gone (the worker must then drop the answer).
  //
  // Lifetime contract: `reply` holds a plain pointer to the Worker that submitted and posts
  // the answer onto that worker's loop (EventLoop::post); the connection is looked up there
  // by a per-worker id, so one that died meanwhile costs nothing but a dropped answer. A
  // `reply` may therefore run at any time before its Worker's destructor starts, even after
  // the worker's loop has stopped (the answer is then discarded with the loop). The control
  // thread owns the handler and the workers, and must stop calling `reply` before it destroys
  // a worker: join the worker threads, stop the admin side (no more replies), then destroy
  // the workers. A `reply` run during or after a Worker's destruction is a use-after-free.
  // Destroying a `reply` without calling it is safe: the connection waits
  // Settings::admin_reply_timeout_ms, answers 504 and closes.
  virtual void submit(AdminRequest req, std::function<void(AdminResponse)> reply) = 0;
};

// Bodies larger than this get 413 without being read whole (1.5 MiB, as APISIX's
// client_max_body_size for the admin server).
inline constexpr uint64_t kAdminMaxBody = 1536 * 1024;

// True for a path the Admin API serves on a proxy port: /apisix/admin or below it. `path` is
// the request target up to '?'. One length check and one compare, for every proxied request.
inline bool is_admin_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/apisix/admin";
  return path.size() >= kPrefix.size() && path.compare(0, kPrefix.size(), kPrefix) == 0 &&
         (path.size() == kPrefix.size() || path[kPrefix.size()] == '/');
}

}  // namespace sluice::server
