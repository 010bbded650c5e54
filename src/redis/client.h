#pragma once
// An asynchronous client for one Redis server, driven by a worker's event loop. It never
// blocks the loop: it connects lazily and without blocking, pipelines requests on one
// connection, matches replies to callbacks in FIFO order, and coalesces every command issued
// during one batch of events into one write.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "io/event_loop.h"
#include "io/socket.h"
#include "io/timer.h"
#include "redis/resp.h"
#include "redis/script.h"

namespace sluice::redis {

// Where the outcome of one request goes: a function pointer and two words, so issuing a
// command allocates nothing for it. Exactly one of `reply` and `error` is set: `reply` for
// anything the server answered (a Redis error such as "-ERR ..." is a reply of type kError),
// a non-empty `error` for a request that got no answer ("timeout", "connection refused", ...).
// Both are valid only during the call.
// Thread: worker
struct Callback {
  void (*fn)(void* ctx, uint64_t token, const Reply* reply, std::string_view error) = nullptr;
  void* ctx = nullptr;
  uint64_t token = 0;
};

// How to reach and log in to one Redis server.
// Thread: any (value type)
struct ClientOptions {
  std::string host = "127.0.0.1";  // an IP literal, or a name resolved when the client is built
  uint16_t port = 6379;
  std::optional<std::string> username;  // AUTH <username> <password> (Redis 6 ACL)
  std::optional<std::string> password;  // AUTH <password>
  uint32_t database = 0;                // SELECT <database> when not 0
  uint32_t timeout_ms = 1000;           // per request, from command() to its reply
  uint32_t connect_timeout_ms = 1000;   // TCP connect
  ParserLimits limits;
};

// Resolves `host` ("10.0.0.1", "::1", "[::1]" or a name) to an address. A name goes through
// getaddrinfo, which blocks: call this at configuration time, never on a worker's loop.
common::StatusOr<io::SockAddr> resolve_address(const std::string& host, uint16_t port);

// A pipelined connection to one Redis server.
//
// Errors a callback may see: "timeout" (no reply within timeout_ms: replies are ordered, so
// the connection is closed and every pending request fails with it), "connection refused",
// "connect timeout", "connection closed" (the server closed it), "connection reset",
// "protocol error: <why>", "AUTH failed: <server's error>", "SELECT failed: <server's error>",
// "cannot resolve ...", "connect failed: <errno text>" and "empty command".
//
// After a failed connect (refused, timed out, or AUTH/SELECT refused) no new connect is tried
// for kReconnectDelayMs: commands issued meanwhile fail with the same error, so a Redis outage
// costs one connect attempt per client per 200 ms, not one per request.
//
// Callbacks are never called from inside command() or eval(): even an immediate failure is
// reported from the loop, after the current batch of events. A callback may issue commands on
// any client and may cancel(); it must not destroy the client that calls it. The destructor
// does not call the callbacks of pending requests: an owner that may go away first cancels
// its tokens, or destroys the client before its own state.
// Thread: worker
class Client {
 public:
  using Options = ClientOptions;
  static constexpr uint32_t kReconnectDelayMs = 200;

  // Resolves options.host now if it is not an IP literal (blocking; see resolve_address).
  Client(io::EventLoop& loop, ClientOptions options);
  // Uses `addr` as the server's address (options.host and port are for messages only).
  Client(io::EventLoop& loop, ClientOptions options, const io::SockAddr& addr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `args` (e.g. {"INCRBY", key, "1"}) and calls `cb` with the reply. Empty `args` fail
  // with "empty command".
  void command(std::span<const std::string_view> args, Callback cb);
  // Runs `script` with EVALSHA, and with EVAL (once) when the server answers NOSCRIPT.
  // `script` must outlive the callback.
  void eval(const Script& script, std::span<const std::string_view> keys,
            std::span<const std::string_view> args, Callback cb);
  // Forgets the callbacks of pending requests with this token; their replies are still read
  // and dropped. Returns how many were cancelled.
  size_t cancel(uint64_t token);

  size_t pending() const { return pending_; }
  bool connected() const { return state_ == State::kReady; }
  uint64_t connect_attempts() const { return connect_attempts_; }
  const ClientOptions& options() const { return opts_; }

 private:
  // One TCP connection. The client retires it to the loop when done with it, so events
  // already fetched for its fd in the current batch are dropped instead of reaching a newer
  // connection.
  // Thread: worker
  class Conn : public io::IoHandler {
   public:
    Conn(int fd, Client* owner) : fd(fd), owner(owner) {}
    ~Conn() override;
    void on_io(uint32_t events) override;

    int fd;
    Client* owner;
  };
  struct Slot;
  enum class State : uint8_t { kIdle, kConnecting, kReady };
  enum class Kind : uint8_t { kUser, kEvalSha, kAuth, kSelect };

  Slot* take_slot(Kind kind, Callback cb);
  void release(Slot* s);
  void push_back(Slot* s);
  void push_front(Slot* s);
  Slot* pop_front();
  void kick();
  void fail_rejected();

  static void on_kick(void* self);
  static void on_connect_timeout(void* self);
  static void on_slot_timeout(void* slot);
  void start_connect();
  void queue_handshake();
  void on_io(uint32_t events);
  void on_connected();
  void read_replies();
  bool consume(std::string_view in);
  void on_reply(const Reply& reply);
  bool flush();

  void close_conn();
  void close_with_error(std::string_view error);
  void connect_failed(std::string error);
  void fail_all(std::string_view error);

  io::EventLoop& loop_;
  ClientOptions opts_;
  io::SockAddr addr_;
  std::string config_error_;  // why addr_ is unusable; every command fails with it

  State state_ = State::kIdle;
  std::unique_ptr<Conn> conn_;
  std::string out_;  // encoded commands not yet written; out_[0, out_off_) already went
  size_t out_off_ = 0;
  Parser parser_;
  std::unique_ptr<char[]> read_buf_;

  // Requests in the order their replies will come (AUTH/SELECT first), then a free list.
  Slot* head_ = nullptr;
  Slot* tail_ = nullptr;
  size_t pending_ = 0;
  Slot* free_ = nullptr;
  Slot* rejected_ = nullptr;  // empty commands, failed at the next kick
  std::vector<std::unique_ptr<Slot>> slots_;

  io::Timer kick_timer_{&Client::on_kick, this};
  io::Timer connect_timer_{&Client::on_connect_timeout, this};
  uint64_t retry_at_ms_ = 0;
  std::string last_error_;
  uint64_t connect_attempts_ = 0;
};

}  // namespace sluice::redis
