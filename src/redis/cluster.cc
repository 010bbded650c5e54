#include "redis/cluster.h"

#include <charconv>
#include <cstdint>
#include <utility>

#include "common/log.h"

namespace sluice::redis {

// One command on its way through the cluster: a copy of its arguments, so that it can be
// resent after a redirection. Ops are reused, with their strings' capacity.
// Thread: worker
struct ClusterClient::Op {
  Op* next = nullptr;  // in the waiting list or the free list
  bool live = false;
  Callback user;
  uint16_t slot = 0;
  const Script* script = nullptr;
  size_t nkeys = 0;                // eval: parts holds the keys, then the args
  std::vector<std::string> parts;  // command: the arguments
  std::vector<std::string_view> views;
  bool moved = false;
  bool asked = false;
  size_t node = 0;  // where it was sent last
};

namespace {

bool parse_u64(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

// One "[start, end, [ip, port, ...], replicas...]" entry of CLUSTER SLOTS.
bool read_range(const Reply& e, int64_t* start, int64_t* end, std::string* ip, int64_t* port) {
  if (e.type != Reply::Type::kArray || e.elements.size() < 3) {
    return false;
  }
  const Reply& master = e.elements[2];
  if (e.elements[0].type != Reply::Type::kInteger || e.elements[1].type != Reply::Type::kInteger ||
      master.type != Reply::Type::kArray || master.elements.size() < 2 ||
      !master.elements[0].is_string() || master.elements[1].type != Reply::Type::kInteger) {
    return false;
  }
  *start = e.elements[0].integer;
  *end = e.elements[1].integer;
  *ip = master.elements[0].str;
  *port = master.elements[1].integer;
  return *start >= 0 && *start <= *end && *end<kClusterSlots&& * port> 0 && *port <= 65535;
}

}  // namespace

bool split_host_port(std::string_view text, std::string* host, uint16_t* port) {
  const size_t colon = text.rfind(':');
  uint64_t p = 0;
  if (colon == std::string_view::npos || !parse_u64(text.substr(colon + 1), &p) || p == 0 ||
      p > 65535) {
    return false;
  }
  std::string_view h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  host->assign(h);
  *port = static_cast<uint16_t>(p);
  return true;
}

ClusterClient::ClusterClient(io::EventLoop& loop, ClusterOptions options)
    : loop_(loop), opts_(std::move(options)), slot_node_(kClusterSlots, -1) {
  for (const std::string& seed : opts_.seeds) {
    std::string host;
    uint16_t port = 0;
    if (!split_host_port(seed, &host, &port) || host.empty()) {
      config_error_ = fmt::format("cluster: invalid seed '{}': expected host:port", seed);
      return;
    }
    auto addr = resolve_address(host, port);
    if (!addr.is_ok()) {
      config_error_ = "cluster: " + addr.status().message();
      return;
    }
    node_index(addr->ip_text(), port);
  }
  if (nodes_.empty()) {
    config_error_ = "cluster: no seed nodes";
  }
}

ClusterClient::~ClusterClient() = default;

ClusterClient::Op* ClusterClient::new_op(Callback cb, uint16_t slot) {
  Op* op = free_ops_;
  if (op != nullptr) {
    free_ops_ = op->next;
  } else {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
  }
  op->next = nullptr;
  op->live = true;
  op->user = cb;
  op->slot = slot;
  op->script = nullptr;
  op->nkeys = 0;
  op->moved = op->asked = false;
  return op;
}

void ClusterClient::free_op(Op* op) {
  op->live = false;
  op->user = Callback{};
  op->next = free_ops_;
  free_ops_ = op;
}

void ClusterClient::command(std::span<const std::string_view> args, Callback cb) {
  Op* op = new_op(cb, args.size() >= 2 ? key_slot(args[1]) : 0);
  op->parts.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    op->parts[i].assign(args[i]);
  }
  start(op);
}

void ClusterClient::eval(const Script& script, std::span<const std::string_view> keys,
                         std::span<const std::string_view> args, Callback cb) {
  Op* op = new_op(cb, keys.empty() ? 0 : key_slot(keys[0]));
  op->script = &script;
  op->nkeys = keys.size();
  op->parts.resize(keys.size() + args.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    op->parts[i].assign(keys[i]);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    op->parts[keys.size() + i].assign(args[i]);
  }
  start(op);
}

size_t ClusterClient::cancel(uint64_t token) {
  size_t n = 0;
  for (auto& op : ops_) {
    if (op->live && op->user.fn != nullptr && op->user.token == token) {
      op->user.fn = nullptr;
      ++n;
    }
  }
  return n;
}

std::string ClusterClient::node_for_slot(uint16_t slot) const {
  const int16_t n = slot < kClusterSlots ? slot_node_[slot] : -1;
  return n < 0 ? std::string() : nodes_[static_cast<size_t>(n)].name;
}

void ClusterClient::start(Op* op) {
  if (!config_error_.empty()) {
    wait_for_map(op);
    if (!kick_timer_.armed()) {
      loop_.arm(kick_timer_, 0);  // callbacks are never called from inside command()
    }
    return;
  }
  route(op, false);
}

void ClusterClient::on_kick(void* self) {
  auto* c = static_cast<ClusterClient*>(self);
  c->fail_waiting(c->config_error_);
}

void ClusterClient::wait_for_map(Op* op) {
  op->next = nullptr;
  (waiting_tail_ != nullptr ? waiting_tail_->next : waiting_head_) = op;
  waiting_tail_ = op;
}

void ClusterClient::route(Op* op, bool after_refresh) {
  const int16_t n = map_ready_ ? slot_node_[op->slot] : -1;
  if (n >= 0) {
    send(op, static_cast<size_t>(n), false);
  } else if (after_refresh) {
    deliver(op, nullptr, fmt::format("cluster: slot {} is not served by any node", op->slot));
  } else {
    wait_for_map(op);
    refresh(true);
  }
}

Client* ClusterClient::client_for(size_t node) {
  Node& n = nodes_[node];
  if (!n.client) {
    ClientOptions o;
    o.host = n.ip;
    o.port = n.addr.port();
    o.username = opts_.username;
    o.password = opts_.password;
    o.timeout_ms = opts_.timeout_ms;
    o.connect_timeout_ms = opts_.connect_timeout_ms;
    o.limits = opts_.limits;
    n.client = std::make_unique<Client>(loop_, std::move(o), n.addr);
  }
  return n.client.get();
}

void ClusterClient::send(Op* op, size_t node, bool asking) {
  op->node = node;
  Client* c = client_for(node);
  if (asking) {
    static constexpr std::string_view kAsking[] = {"ASKING"};
    c->command(kAsking, Callback{});  // pipelined right before the command, on its connection
  }
  op->views.assign(op->parts.begin(), op->parts.end());
  const Callback cb{&ClusterClient::on_node_reply, this, reinterpret_cast<uintptr_t>(op)};
  if (op->script != nullptr) {
    const std::span<const std::string_view> all(op->views);
    c->eval(*op->script, all.first(op->nkeys), all.subspan(op->nkeys), cb);
  } else {
    c->command(op->views, cb);
  }
}

void ClusterClient::deliver(Op* op, const Reply* reply, std::string_view error) {
  const Callback cb = op->user;
  free_op(op);  // first, so the callback's own commands can reuse it
  if (cb.fn != nullptr) {
    cb.fn(cb.ctx, cb.token, reply, error);
  }
}

void ClusterClient::on_node_reply(void* ctx, uint64_t token, const Reply* reply,
                                  std::string_view error) {
  auto* self = static_cast<ClusterClient*>(ctx);
  Op* op = reinterpret_cast<Op*>(static_cast<uintptr_t>(token));
  if (reply != nullptr && reply->is_error() && self->redirect(op, *reply)) {
    return;
  }
  if (reply == nullptr) {
    self->refresh(false);  // a node that fails may have been replaced by a failover
  }
  self->deliver(op, reply, error);
}

// "MOVED <slot> <ip>:<port>" or "ASK <slot> <ip>:<port>"; an empty ip means the node that
// answered. False (the error goes to the caller as it is) when it is neither, is malformed,
// or this op already followed one of its kind.
bool ClusterClient::redirect(Op* op, const Reply& reply) {
  std::string_view s = reply.str;
  const bool moved = s.starts_with("MOVED ");
  if (!moved && !s.starts_with("ASK ")) {
    return false;
  }
  if (moved ? op->moved : op->asked) {
    return false;
  }
  s.remove_prefix(moved ? 6 : 4);
  const size_t space = s.find(' ');
  uint64_t slot = 0;
  std::string host;
  uint16_t port = 0;
  if (space == std::string_view::npos || !parse_u64(s.substr(0, space), &slot) ||
      slot >= kClusterSlots || !split_host_port(s.substr(space + 1), &host, &port)) {
    return false;
  }
  auto node = node_index(host.empty() ? nodes_[op->node].ip : host, port);
  if (!node) {
    return false;
  }
  if (moved) {
    op->moved = true;
    slot_node_[slot] = static_cast<int16_t>(*node);
    refresh(false);
  } else {
    op->asked = true;
  }
  send(op, *node, !moved);
  return true;
}

void ClusterClient::refresh(bool force) {
  if (refreshing_ || !config_error_.empty()) {
    return;
  }
  const uint64_t now = loop_.now_ms();
  if (!force && map_loads_ > 0 && now < last_refresh_ms_ + kRefreshIntervalMs) {
    return;
  }
  refreshing_ = true;
  refresh_tries_ = 0;
  last_refresh_ms_ = now;
  ask_for_slots();
}

void ClusterClient::ask_for_slots() {
  const size_t node = refresh_next_ % nodes_.size();
  static constexpr std::string_view kSlots[] = {"CLUSTER", "SLOTS"};
  client_for(node)->command(kSlots, Callback{&ClusterClient::on_slots_reply, this, node});
}

void ClusterClient::on_slots_reply(void* ctx, uint64_t node, const Reply* reply,
                                   std::string_view error) {
  auto* self = static_cast<ClusterClient*>(ctx);
  if (reply != nullptr && self->apply_slots(*reply, node)) {
    self->refreshing_ = false;
    self->refresh_next_ = node;  // it answered: ask it first next time
    Op* list = self->waiting_head_;
    self->waiting_head_ = self->waiting_tail_ = nullptr;
    while (list != nullptr) {
      Op* op = list;
      list = op->next;
      self->route(op, true);
    }
    return;
  }
  const std::string why = reply == nullptr    ? std::string(error)
                          : reply->is_error() ? reply->str
                                              : "unexpected reply " + describe(*reply);
  self->refresh_error_ =
      fmt::format("cluster: no slot map from {}: {}", self->nodes_[node].name, why);
  SLUICE_LOG(kWarn, "redis {}", self->refresh_error_);
  self->refresh_next_ = node + 1;
  if (++self->refresh_tries_ < self->nodes_.size()) {
    self->ask_for_slots();
    return;
  }
  self->refreshing_ = false;
  self->fail_waiting(self->refresh_error_);
}

bool ClusterClient::apply_slots(const Reply& reply, size_t from_node) {
  if (reply.type != Reply::Type::kArray) {
    return false;
  }
  std::vector<int16_t> map(kClusterSlots, -1);
  for (const Reply& e : reply.elements) {
    int64_t start = 0, end = 0, port = 0;
    std::string ip;
    if (!read_range(e, &start, &end, &ip, &port)) {
      return false;
    }
    auto node = node_index(ip.empty() ? nodes_[from_node].ip : ip, static_cast<uint16_t>(port));
    if (!node) {
      SLUICE_LOG(kWarn, "redis cluster: node '{}' is not an IP address; slots {}-{} unserved", ip,
                 start, end);
      continue;
    }
    for (int64_t s = start; s <= end; ++s) {
      map[static_cast<size_t>(s)] = static_cast<int16_t>(*node);
    }
  }
  slot_node_ = std::move(map);
  map_ready_ = true;
  ++map_loads_;
  return true;
}

void ClusterClient::fail_waiting(std::string_view error) {
  const std::string why(error);
  Op* list = waiting_head_;
  waiting_head_ = waiting_tail_ = nullptr;
  while (list != nullptr) {
    Op* op = list;
    list = op->next;
    deliver(op, nullptr, why);
  }
}

// `host` is a copy: it may name a node in nodes_, which may grow here.
std::optional<size_t> ClusterClient::node_index(std::string host, uint16_t port) {
  io::SockAddr addr;
  if (!io::make_sockaddr(host, port, &addr)) {
    return std::nullopt;
  }
  const std::string ip = addr.ip_text();
  std::string name = addr.storage.ss_family == AF_INET6 ? fmt::format("[{}]:{}", ip, port)
                                                        : fmt::format("{}:{}", ip, port);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].name == name) {
      return i;
    }
  }
  if (nodes_.size() >= static_cast<size_t>(INT16_MAX)) {
    return std::nullopt;
  }
  nodes_.push_back(Node{std::move(name), ip, addr, nullptr});
  return nodes_.size() - 1;
}

}  // namespace sluice::redis
