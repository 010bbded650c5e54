#pragma once
// A worker's keep-alive pool of idle upstream connections, keyed by node address (and, for TLS,
// by server name and client context too: a connection made for one name or certificate never
// serves another). Most recently used first, so a few warm connections carry the load and the
// rest age out. The cap counts per node, whatever the names: server names may come from
// clients' Host headers, and must not multiply the idle connections a node is held to.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/event_loop.h"
#include "proxy/upstream_conn.h"

namespace sluice::proxy {

// Thread: worker
class Pool {
 public:
  explicit Pool(io::EventLoop& loop) : loop_(loop) {}
  ~Pool();

  // An idle connection to `key`, or null.
  std::unique_ptr<UpstreamConn> take(const std::string& key);
  // Parks `c`; closes it instead when `max_idle` connections to its node are already parked.
  void put(std::unique_ptr<UpstreamConn> c, uint32_t max_idle, uint32_t idle_ms);
  // Closes `c` (idle and readable: the peer closed it or sent garbage; or idle too long).
  void evict(UpstreamConn* c);
  // Closes every idle connection (on shutdown).
  void clear();
  size_t idle_count() const;
  // Keys with a list kept (tests: TLS names do not pile up, nodes keep theirs).
  size_t key_count() const { return idle_.size(); }

  // The node a pool key names: the address before the first '|' (what a TLS key adds).
  static std::string_view node_of(std::string_view key) { return key.substr(0, key.find('|')); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  // One connection of `key` left the pool.
  void forget(const std::string& key);
  // A TLS key names a server name, which may come from a client's Host header: its list is
  // dropped when empty so such names cannot pile up. A plain key (a node) keeps its list, so
  // the steady take/put cycle allocates nothing.
  static bool transient(std::string_view key) { return key.find('|') != std::string_view::npos; }

  io::EventLoop& loop_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<UpstreamConn>>> idle_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> per_node_;  // idle per node
};

}  // namespace sluice::proxy
