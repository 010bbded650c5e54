#pragma once
// The plugin interface: six named phases with do-nothing defaults, the per-request context a
// hook sees, and what a hook may answer. Configured plugins are immutable objects built on
// the control thread with the snapshot; whatever they keep per worker lives in WorkerLocal.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "http/message.h"
#include "plugin/edits.h"
#include "router/expr.h"

namespace sluice::io {
class EventLoop;
}
namespace sluice::snapshot {
struct Snapshot;
struct Route;
}  // namespace sluice::snapshot
namespace sluice::upstream {
struct Upstream;
}

namespace sluice::plugin {

enum class Phase : uint8_t { kRewrite, kAccess, kBeforeProxy, kHeaderFilter, kBodyFilter, kLog };
inline constexpr int kPhaseCount = 6;

// What a request-phase hook (rewrite, access, before_proxy) tells the runner.
enum class Action : uint8_t {
  kContinue,  // run the next plugin
  kReply,     // end the request with Context::reply_status / reply_body
  kPending,   // the hook suspended the request (Host::suspend) and will resume it
};

struct Context;
class Plugin;
struct Credential;
class Consumers;

// The worker a request runs on, as the plugins see it: suspending a request for an
// asynchronous answer and resuming it. Implemented by server::Worker.
// Thread: worker
class Host {
 public:
  virtual ~Host() = default;
  // Marks `ctx`'s request as waiting; the token names it until resume() or its end.
  virtual uint64_t suspend(Context& ctx) = 0;
  // The waiting request's context, or nullptr when it has gone (client closed, timed out).
  virtual Context* waiting(uint64_t token) = 0;
  // Continues the suspended request's chain with the hook's final answer. Never from inside
  // the hook that suspended: an answer that is ready at once is given from the loop later
  // (redis::Client reports even immediate failures that way).
  virtual void resume(uint64_t token, Action a) = 0;
};

// Per-worker state a plugin keeps across requests (connections, caches), created on first
// use and kept for the worker's life.
// Thread: worker
class WorkerObject {
 public:
  virtual ~WorkerObject() = default;
};

// What a worker offers its plugins.
// Thread: worker (filled by the control thread before the worker starts: worker_init hooks)
struct WorkerLocal {
  int worker_id = 0;
  io::EventLoop* loop = nullptr;
  Host* host = nullptr;

  // A pointer a plugin's worker_init hook leaves for its hooks on this worker, found by the
  // address of a tag the plugin owns (`static const char kTag = 0;`): a few pointer compares
  // per lookup, no hashing on the request path. Null until set.
  void set_slot(const void* tag, void* value);
  template <class T>
  T* slot(const void* tag) const {
    for (const auto& s : slots_) {
      if (s.tag == tag) {
        return static_cast<T*>(s.value);
      }
    }
    return nullptr;
  }

  // The worker's object named `key` of type T, made by `make()` on first use.
  template <class T, class Make>
  T& object(const std::string& key, Make&& make) {
    auto it = objects_.find(key);
    if (it == objects_.end()) {
      it = objects_.emplace(key, make()).first;
    }
    return static_cast<T&>(*it->second);
  }

 private:
  struct Slot {
    const void* tag;
    void* value;
  };
  std::vector<Slot> slots_;
  std::unordered_map<std::string, std::unique_ptr<WorkerObject>> objects_;
};

// One request as the plugins see it. Lives in the exchange's reusable state; reset()
// between requests keeps the strings' capacity.
// Thread: worker
struct Context {
  // The client's request as parsed. Valid through the request phases (rewrite ..
  // before_proxy); null afterwards.
  const http::RequestHead* req = nullptr;
  router::MatchContext match;  // the request, client address and port, for filters and vars
  // The snapshot this request pinned and the route it matched (null when none matched); both
  // live until the log phase has run. The route names its service's and upstream's objects.
  const snapshot::Snapshot* snapshot = nullptr;
  const snapshot::Route* route = nullptr;
  // Views into the pinned snapshot; empty when no route matched.
  std::string_view route_id, service_id, matched_uri, matched_host;
  std::string_view route_name, service_name;
  // Set by auth plugins (attach_consumer, consumer.h): the consumer's name and group id (for
  // vars, keys and labels) and the credential the request presented.
  std::string_view consumer;
  std::string_view consumer_group_id;
  const Credential* credential = nullptr;
  // The pinned snapshot's consumers, where auth plugins find their indexes. Never null while
  // the request phases run.
  const Consumers* consumers = nullptr;
  WorkerLocal* worker = nullptr;
  void* conn = nullptr;  // the server's connection object; opaque to plugins

  // What the request phases change of the request the upstream gets (edits.h).
  RequestEdits upstream;
  // What header_filter hooks change of the response head the client gets, whether it comes
  // from the upstream or from the gateway. Request-phase hooks may add headers here too
  // (limit-count's quota headers): they go out with whichever response follows.
  ResponseEdits resp;
  // Set by a request-phase hook (traffic-split) to send the request to another upstream than
  // the route's: one of the pinned snapshot's upstreams (plugin/upstreams.h), tried with its
  // own balancer, retries, timeouts, health checks and pool. `upstream_missing` instead: the
  // upstream_id the hook chose names nothing, and the request is answered 502 as APISIX does.
  const upstream::Upstream* upstream_override = nullptr;
  bool upstream_missing = false;
  // The whole request body, when a plugin of the chains needs_body(); empty otherwise.
  std::string_view request_body;
  // The upstream's response head, in header_filter; null for the gateway's own answers.
  const http::ResponseHead* upstream_resp = nullptr;
  // Set with Action::kReply: the status and (JSON) body of the gateway's answer.
  int reply_status = 0;
  std::string reply_body;
  // Where BodyPiece::replace() keeps the bytes of the piece in flight.
  std::string body_buffer;

  // Filled in as the request goes: the final status, the upstream node, byte counts and
  // times (nanoseconds, CLOCK_MONOTONIC; 0 = did not happen). Times are taken only when a
  // chain has a log hook (timed).
  bool timed = false;
  int status = 0;
  std::string_view upstream_ip;  // the node of the try in flight (the last one, afterwards)
  uint16_t upstream_port = 0;
  uint64_t start_ns = 0, upstream_start_ns = 0, upstream_end_ns = 0;
  uint64_t bytes_in = 0, bytes_out = 0;

  // Where a suspended chain resumes, and which plugins' `_meta.filter` said no (chain.cc).
  Phase phase = Phase::kRewrite;
  uint16_t cursor = 0;
  uint64_t skip_global = 0, skip_route = 0;
  // The plugin whose hook returned kPending; it reads its own conf from here on resume.
  const Plugin* pending = nullptr;
  // A buffer hooks may build text in (limit-count's key); its capacity is kept across
  // requests, so steady state allocates nothing.
  std::string scratch;
  // What a head() hook keeps for the same plugin's later hooks (prometheus: extra label values
  // read from the request head, which is gone by the log phase). Capacity kept, like scratch.
  // One buffer for the request: only one plugin may read the head (prometheus, which
  // prefer_route keeps to one instance); a second would need it keyed by entry. The values
  // are the client's, taken before any plugin edits the request.
  std::string stash;

  // One bit of per-request state for each plugin of the chains, for a hook to tell a later
  // phase's hook what it decided (response-rewrite: "this response is rewritten"). The runner
  // points `entry` at the hook it calls.
  void mark() { marks_[entry >> 6] |= uint64_t{1} << (entry & 63); }
  bool marked() const { return (marks_[entry >> 6] >> (entry & 63) & 1) != 0; }
  uint16_t entry = 0;  // 0..63: a global rule's entry; 64..127: the route's
  uint64_t marks_[2] = {0, 0};

  void reset();
};

// A configured plugin: one conf on one route (or global rule, service, plugin_config).
// Thread: any (immutable)
class Plugin {
 public:
  virtual ~Plugin() = default;
  // Bit (1 << Phase) per phase this plugin implements; the chain lists it only there.
  virtual uint32_t phases() const = 0;
  // The plugin reads the request body (Context::request_body): the exchange reads it whole,
  // up to its cap (a bigger one is refused with 413), before the rewrite phase runs, and then
  // sends it upstream with a Content-Length. Streaming is kept for every other route.
  virtual bool needs_body() const { return false; }
  // The plugin reads the request head once per request before any phase, whatever answers
  // the request later (a reply from an earlier plugin, a 404): plugin::prepare calls head()
  // then, unless `_meta.filter` or prefer_route skips the plugin for this request.
  virtual bool reads_head() const { return false; }
  virtual void head(Context&) const {}
  virtual Action rewrite(Context&) const { return Action::kContinue; }
  virtual Action access(Context&) const { return Action::kContinue; }
  virtual Action before_proxy(Context&) const { return Action::kContinue; }
  // The response head is known (ctx.status; ctx.upstream_resp for an upstream's answer) and
  // not yet written: edit it through ctx.resp.
  virtual void header_filter(Context&) const {}
  // Sees each piece of the response body as it leaves (piece.eof() with the last, possibly
  // empty, piece), and may replace or drop it. The body is streamed, never buffered for a
  // plugin: one that changes the body's length says so in header_filter
  // (ctx.resp.body_changes, or ctx.resp.content_length when it knows the new length).
  virtual void body_filter(Context&, BodyPiece&) const {}
  virtual void log(Context&) const {}
};

inline constexpr uint32_t phase_bit(Phase p) { return 1u << static_cast<uint32_t>(p); }

uint64_t monotonic_ns();

}  // namespace sluice::plugin
