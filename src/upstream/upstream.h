#pragma once
// An upstream as workers see it: resolved nodes, timeouts and pool settings. Immutable once
// published (the chash ring included); per-worker mutable state (balancers, pools) lives
// beside it, indexed by `index`.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "health/set.h"
#include "io/socket.h"
#include "tls/context.h"
#include "upstream/chash_ring.h"
#include "upstream/hash_key.h"

namespace sluice::upstream {

enum class PassHost { kPass, kNode, kRewrite };
enum class BalancerType : uint8_t { kRoundRobin, kChash, kLeastConn, kEwma };

// Thread: any (immutable)
struct Node {
  std::string host;  // as configured (IP literal or DNS name)
  uint16_t port = 0;
  int weight = 1;
  int priority = 0;
  bool resolved = false;  // false: DNS gave no address; the node is skipped
  io::SockAddr addr;      // valid when resolved
  std::string addr_key;   // "ip:port", the keep-alive pool key
  // "host" or "host:port" (port omitted when the scheme's own, 80 or 443), for pass_host node
  std::string host_header;
  std::string ip;  // textual IP, for logs and metrics
};

// Thread: any (immutable)
struct Timeouts {
  uint32_t connect_ms = 60000;
  uint32_t send_ms = 60000;
  uint32_t read_ms = 60000;
};

// Thread: any (immutable)
struct Upstream {
  std::string id;      // resource id, or "route:<id>" for an inline upstream
  uint32_t index = 0;  // position in the snapshot's upstream list
  std::vector<Node> nodes;
  // Some node has an address. APISIX drops nodes whose host does not resolve, so an upstream
  // left with none answers 503 "no valid upstream node", as one with no nodes at all.
  bool any_resolved = false;
  int retries = 0;                // further nodes tried after a failed try (errors, timeouts)
  uint32_t retry_timeout_ms = 0;  // no new try this long after the first began; 0: unlimited
  BalancerType type = BalancerType::kRoundRobin;
  HashOn hash_on = HashOn::kVars;  // chash only, as is everything down to ring
  std::string key;                 // as configured
  HashKey hash_key;                // hash_on + key, compiled
  ChashRing ring;
  Timeouts timeouts;
  uint32_t pool_size = 320;
  uint32_t pool_idle_ms = 60000;
  uint32_t pool_requests = 1000;
  PassHost pass_host = PassHost::kPass;
  // scheme grpc or grpcs: tries speak HTTP/2 (h2c by prior knowledge, or TLS with ALPN h2)
  // and failures answer gRPC statuses.
  bool grpc = false;
  std::string upstream_host;
  // scheme https or grpcs: how connections are made (verification, client certificate, resumption),
  // shared by every upstream with the same tls settings and kept across rebuilds; null:
  // plaintext.
  std::shared_ptr<const tls::ClientContext> tls;
  // Why the https upstream cannot connect (its tls.client_cert_id names no client ssl, a
  // certificate does not load); requests get 502 and this is logged. Empty: none.
  std::string tls_error;
  // Health of the nodes (index = node index) when `checks` is set and there are two or more
  // nodes; shared with the active checker and kept across rebuilds.
  health::SetPtr health;

  // The nodes a balancer must skip for health: the unhealthy ones, or none when every node
  // is unhealthy (APISIX then balances across all of them). One atomic load.
  uint64_t unhealthy_mask() const { return health ? health->exclude_mask() : 0; }
  // Passive health checks: what real traffic saw of node `node` (no-ops without checks).
  void report_status(int node, int status) const {
    if (health) {
      health->report_status(node, status);
    }
  }
  void report_failure(int node, health::Failure kind) const {
    if (health) {
      health->report_failure(node, kind);
    }
  }
};

}  // namespace sluice::upstream
