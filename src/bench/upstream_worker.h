#pragma once
// One thread of the built-in upstream: accepts from the shared listening socket, parses
// requests (pipelined, with bodies) and answers them at once or when the FIFO server says.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/h1/chunked.h"
#include "http/message.h"
#include "io/buffer.h"

namespace sluice::bench {

struct UpstreamResponses;
class ServiceClock;

// Thread: worker
class UpstreamWorker {
 public:
  // `clock` is null when responses go out at once.
  UpstreamWorker(int listen_fd, int stop_fd, const UpstreamResponses& responses,
                 ServiceClock* clock);
  ~UpstreamWorker();
  UpstreamWorker(const UpstreamWorker&) = delete;
  UpstreamWorker& operator=(const UpstreamWorker&) = delete;

  // Serves until the stop eventfd becomes readable.
  void run();

 private:
  // Which canned response a request gets.
  enum class Reply : uint8_t { kKeepAlive, kClose, kKeepAlive10, kBad };
  struct Conn {
    int fd = -1;
    uint32_t gen = 0;
    uint32_t index = 0;  // slot in conns_
    io::Buffer in;
    std::string out;  // responses not yet written; capacity kept across requests
    size_t out_off = 0;
    h1::ChunkedDecoder chunked;
    http::BodyKind body = http::BodyKind::kNone;  // of the request whose body is being read
    uint64_t body_left = 0;
    Reply body_reply = Reply::kKeepAlive;  // the reply owed once that body ends
    bool body_head_only = false;
    bool closing = false;  // no more requests are read; close once the replies are out
    bool shut = false;     // our write side is shut; waiting for the peer's close
    bool paused = false;   // too much unsent output: reading stops until it drains
    bool peer_closed = false;
    uint32_t pending = 0;  // replies waiting on the service clock
  };
  // A reply the service clock has scheduled.
  struct Due {
    uint64_t at_ns;
    uint32_t conn;
    uint32_t gen;
    Reply reply;
    bool head_only;
  };

  void accept_all();
  void on_event(Conn& c, uint32_t events);
  void on_readable(Conn& c);
  void parse_requests(Conn& c);
  bool consume_body(Conn& c);
  void reply(Conn& c, Reply r, bool head_only);
  void append_reply(Conn& c, Reply r, bool head_only);
  void flush(Conn& c);
  void flush_and_resume(Conn& c);
  void close(Conn& c);
  void fire_due(uint64_t now);
  void push_due(const Due& d);

  int listen_fd_;
  int stop_fd_;
  int epfd_ = -1;
  const UpstreamResponses& responses_;
  ServiceClock* clock_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<uint32_t> free_;
  std::unique_ptr<http::RequestHead> head_;  // parse scratch
  // FIFO of scheduled replies: this thread's completion times only grow, so a ring suffices.
  std::vector<Due> due_;
  size_t due_head_ = 0;
  size_t due_size_ = 0;
};

}  // namespace sluice::bench
