#pragma once
// The worker's mirror client: sends copies of requests to a mirror fire-and-forget, on the
// worker's loop. Each copy is a MirrorJob (an HTTP/1.1 upstream request over the client's own
// keep-alive pool) that writes the request, reads the whole answer and drops it; nothing of it
// reaches the client's request. The client caps the jobs (and their body bytes) in flight and
// drops the copies beyond, counting them in a log line at most once a second.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "codec/h1/parser.h"
#include "http/message.h"
#include "io/event_loop.h"
#include "io/socket.h"
#include "io/timer.h"
#include "plugin/plugin.h"
#include "proxy/h1_upstream_request.h"
#include "proxy/pool.h"
#include "tls/context.h"

namespace sluice::plugins::proxy_mirror {

// Where copies go: resolved once when the conf is built, shared by the jobs that use it (a
// job may outlive the conf, a snapshot change away).
// Thread: any (immutable)
struct MirrorPeer {
  io::SockAddr addr;
  std::string key;   // "ip:port", the pool's key
  std::string host;  // as configured, for the Host and TLS server name when https
  std::shared_ptr<const tls::ClientContext> tls;  // https: no verification, as nginx's default
  bool resolved = false;
  // plugin_attr.proxy-mirror.timeout (APISIX's defaults: 60 s each).
  uint32_t connect_ms = 60000, send_ms = 60000, read_ms = 60000;
};

// One copy of a request in flight.
struct MirrorCopy {
  std::string method, target, host;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string body;
  bool has_body = false;
};

class MirrorClient;

// Thread: worker
class MirrorJob final : public proxy::UpstreamOwner {
 public:
  MirrorJob(MirrorClient& client, std::shared_ptr<const MirrorPeer> peer, MirrorCopy copy);
  ~MirrorJob() override;
  // False when the connect failed at once (the job is over).
  bool start();
  void on_upstream_event() override;
  size_t body_size() const { return copy_.body.size(); }

 private:
  enum class State : uint8_t { kSend, kHead, kBody, kDone };
  void drive();
  void finish(bool reusable);
  static void on_timeout(void* self);

  MirrorClient& client_;
  std::shared_ptr<const MirrorPeer> peer_;
  MirrorCopy copy_;
  std::vector<http::Header> fields_;
  proxy::H1UpstreamRequest up_;
  proxy::Target target_;
  http::ResponseHead head_;
  io::Timer timer_{&MirrorJob::on_timeout, this};
  State state_ = State::kSend;
};

// Thread: worker
class MirrorClient final : public plugin::WorkerObject {
 public:
  // Copies in flight per worker, and the body bytes they may hold together.
  static constexpr size_t kMaxJobs = 256;
  static constexpr size_t kMaxBodyBytes = 64 << 20;

  explicit MirrorClient(io::EventLoop& loop);
  ~MirrorClient() override;

  // Sends `copy` to `peer`, or drops it (over the caps, peer unresolved) with a counted log.
  void send(std::shared_ptr<const MirrorPeer> peer, MirrorCopy copy);
  // A job ended; it is destroyed from the loop, outside its own callbacks.
  void done(MirrorJob* job);

  size_t in_flight() const { return jobs_.size(); }
  uint64_t dropped() const { return dropped_; }
  io::EventLoop& loop() { return loop_; }
  proxy::H1UpstreamEnv& env() { return env_; }

 private:
  void drop(std::string_view why);

  io::EventLoop& loop_;
  proxy::Pool pool_;
  h1::Limits limits_;
  proxy::H1UpstreamEnv env_;
  std::unordered_set<MirrorJob*> jobs_;
  size_t body_bytes_ = 0;
  uint64_t dropped_ = 0;
  uint64_t dropped_logged_ = 0;
  uint64_t last_log_ms_ = 0;
};

}  // namespace sluice::plugins::proxy_mirror
