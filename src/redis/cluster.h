#pragma once
// A Redis Cluster client on a worker's event loop: routes each command by its key's slot to
// the node that serves it (one pipelined Client per node, created on first use) and follows
// MOVED and ASK redirections.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/event_loop.h"
#include "io/socket.h"
#include "io/timer.h"
#include "redis/client.h"
#include "redis/resp.h"
#include "redis/script.h"
#include "redis/slot.h"

namespace sluice::redis {

// How to find and log in to a cluster.
// Thread: any (value type)
struct ClusterOptions {
  std::vector<std::string> seeds;  // "host:port" or "[v6]:port"; names resolved when built
  std::optional<std::string> username;
  std::optional<std::string> password;
  uint32_t timeout_ms = 1000;          // per request and per redirection
  uint32_t connect_timeout_ms = 1000;  // per node connect
  ParserLimits limits;
};

// Splits "host:port" or "[v6]:port". False when there is no port or it is not 1-65535.
bool split_host_port(std::string_view text, std::string* host, uint16_t* port);

// Routes commands to the nodes of one Redis Cluster.
//
// The slot map comes from CLUSTER SLOTS, asked of the seeds (then of any known node) on first
// use; commands issued before it arrives wait for it. A "MOVED <slot> <node>" answer moves that
// slot in the map at once, asks for a fresh map in the background (at most one request every
// kRefreshIntervalMs) and resends the command to the named node, once. An "ASK <slot> <node>"
// answer sends ASKING and the command to the named node, once, without touching the map.
// Node addresses in CLUSTER SLOTS and redirections must be IP literals (nothing is resolved on
// the loop). Errors are a Client's, plus "cluster: ..." ones for a map that cannot be had.
// Callbacks follow Client's rules: never called from inside command()/eval(), not called when
// the ClusterClient is destroyed first.
// Thread: worker
class ClusterClient {
 public:
  static constexpr uint32_t kRefreshIntervalMs = 100;

  // Resolves seed names now (blocking; see resolve_address).
  ClusterClient(io::EventLoop& loop, ClusterOptions options);
  ~ClusterClient();
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  // Routed by args[1], the key of nearly every single-key command (GET, SET, INCRBY, PTTL,
  // ...); a command with no arguments goes to the node of slot 0.
  void command(std::span<const std::string_view> args, Callback cb);
  // EVALSHA (EVAL on NOSCRIPT), routed by keys[0]; every key must hash to the same slot.
  void eval(const Script& script, std::span<const std::string_view> keys,
            std::span<const std::string_view> args, Callback cb);
  // As Client::cancel, for requests in flight or waiting for the slot map.
  size_t cancel(uint64_t token);

  bool has_slot_map() const { return map_ready_; }
  uint64_t slot_map_loads() const { return map_loads_; }
  // "ip:port" of the node serving `slot` in the current map; empty when none.
  std::string node_for_slot(uint16_t slot) const;

 private:
  struct Op;
  // One cluster node, keyed by "ip:port".
  struct Node {
    std::string name;  // "ip:port" ("[v6]:port")
    std::string ip;
    io::SockAddr addr;
    std::unique_ptr<Client> client;
  };

  Op* new_op(Callback cb, uint16_t slot);
  void free_op(Op* op);
  void start(Op* op);
  void route(Op* op, bool after_refresh);
  void wait_for_map(Op* op);
  void send(Op* op, size_t node, bool asking);
  void deliver(Op* op, const Reply* reply, std::string_view error);
  static void on_node_reply(void* ctx, uint64_t token, const Reply* reply, std::string_view error);
  bool redirect(Op* op, const Reply& reply);

  static void on_kick(void* self);
  void refresh(bool force);
  void ask_for_slots();
  static void on_slots_reply(void* ctx, uint64_t token, const Reply* reply, std::string_view error);
  bool apply_slots(const Reply& reply, size_t from_node);
  void fail_waiting(std::string_view error);
  std::optional<size_t> node_index(std::string host, uint16_t port);
  Client* client_for(size_t node);

  io::EventLoop& loop_;
  ClusterOptions opts_;
  std::string config_error_;  // a seed that cannot be used; every command fails with it
  std::vector<Node> nodes_;   // the seeds first

  std::vector<int16_t> slot_node_;  // slot -> index in nodes_, -1 when unserved
  bool map_ready_ = false;
  uint64_t map_loads_ = 0;
  bool refreshing_ = false;
  size_t refresh_tries_ = 0;
  size_t refresh_next_ = 0;  // the node asked next
  uint64_t last_refresh_ms_ = 0;
  std::string refresh_error_;

  std::vector<std::unique_ptr<Op>> ops_;  // every Op ever made; free ones are reused
  Op* free_ops_ = nullptr;
  Op* waiting_head_ = nullptr;  // for the slot map, in order
  Op* waiting_tail_ = nullptr;
  io::Timer kick_timer_{&ClusterClient::on_kick, this};  // fails waiters on a config error
};

}  // namespace sluice::redis
