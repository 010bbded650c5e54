#pragma once
// The plugin interface: six named phases with do-nothing defaults, the per-request context a
// hook sees, and what a hook may answer. Configured plugins are immutable objects built on
// the control thread with the snapshot; whatever they keep per worker lives in WorkerLocal.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "http/message.h"
#include "plugin/edits.h"
#include "plugin/trace.h"
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
class BodyCoder;
class CoderState;
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

// The worker's per-request CPU accounting (prometheus's route_accounting): the connection
// code charges the time it spends handling a connection's events (CLOCK_MONOTONIC around its
// drive) to the request in flight, Context::cpu_ns; the log phase takes the time since the last
// charge too (take()). Off until the plugin points `enabled` at its flag and sets it (a route,
// service or global rule carries the plugin); off, a connection event costs one load and branch,
// on, two clock reads.
// Thread: worker (the flag is set by the control thread)
struct CpuMeter {
  const std::atomic<bool>* enabled = nullptr;
  bool running = false;  // within a connection's drive: the time since `mark` is its
  uint64_t mark = 0;     // ns: where the time not charged yet begins
  uint64_t charged = 0;  // ns charged to requests in all, for the plugin's calibration
  bool on() const { return enabled != nullptr && enabled->load(std::memory_order_relaxed); }
  // The time since the mark, which moves to `now`, charged to a request.
  uint64_t take(uint64_t now) {
    const uint64_t d = now > mark ? now - mark : 0;
    mark = now;
    charged += d;
    return d;
  }
  // The mark moves to `now`; the time since goes to no request (the calibration spreads it).
  void skip(uint64_t now) { mark = now; }
};

// What a worker offers its plugins.
// Thread: worker (filled by the control thread before the worker starts: worker_init hooks)
struct WorkerLocal {
  int worker_id = 0;
  io::EventLoop* loop = nullptr;
  Host* host = nullptr;
  CpuMeter cpu;

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

  // The worker's object named `key` of type T, made by `make()` on first use. Found without
  // building a string: hooks call it per request.
  template <class T, class Make>
  T& object(std::string_view key, Make&& make) {
    auto it = objects_.find(key);
    if (it == objects_.end()) {
      it = objects_.emplace(std::string(key), make()).first;
    }
    return static_cast<T&>(*it->second);
  }

 private:
  struct Slot {
    const void* tag;
    void* value;
  };
  std::vector<Slot> slots_;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<WorkerObject>, KeyHash, std::equal_to<>> objects_;
};

// A body a plugin produces piece by piece for its own answer (proxy-cache's hits, from memory
// or from a file): the exchange asks for the next piece only once the previous one reached
// the client's socket, so a slow client holds one piece, never the whole body.
// Thread: worker
class BodySource {
 public:
  enum class Read : uint8_t { kData, kEnd, kError };
  virtual ~BodySource() = default;
  // The next piece (kData, never empty), valid until the next call; kEnd after the last;
  // kError when the body cannot be read whole (the connection is then closed, as for an
  // upstream that breaks mid-body).
  virtual Read next(std::string_view* piece) = 0;
};

// A per-request object a plugin keeps across its hooks (proxy-cache: the entry a hit serves,
// the fill a miss writes). The plugin releases it in its log hook; Context::reset() releases
// one left over (a request whose log phase a filter skipped).
// Thread: worker
class Held {
 public:
  virtual ~Held() = default;
  virtual void release() = 0;
};

// One request as the plugins see it. Lives in the exchange's reusable state; reset()
// between requests keeps the strings' capacity.
// Thread: worker
struct Context {
  // The client's request as parsed. Valid through the request phases (rewrite ..
  // before_proxy); null afterwards.
  const http::RequestHead* req = nullptr;
  router::MatchContext match;  // the request, client address and port, for filters and vars
  // The client address the real-ip plugin gives the request; match.remote_addr then views it.
  // What follows the request phases (X-Real-IP, X-Forwarded-For, the balancer's hash) takes
  // the address from `match`.
  std::string real_ip;
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
  // With Action::kReply, instead of reply_body: a response of the plugin's own making whose
  // body comes from `reply_source` piece by piece (with backpressure), with the head's fields
  // `reply_fields` (the plugin's; they must live until the log phase) and the body's length
  // `reply_length` (-1: unknown, framed by the codec). header_filter and body_filter run on
  // it as on any answer.
  BodySource* reply_source = nullptr;
  std::span<const http::Header> reply_fields;
  int64_t reply_length = -1;
  // The per-request object of the one plugin that keeps one (see Held); null otherwise.
  Held* held = nullptr;
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
  // The worker's time on this request so far, when WorkerLocal::cpu is on (ns); begin()
  // zeroes it, before the plugins' reset(), and the connection adds to it.
  uint64_t cpu_ns = 0;

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
  // The request's id as request-id gave it (the client's, or the one it made), for the access
  // log's $request_id. Capacity kept, like scratch.
  std::string request_id;
  // api-breaker's state key for this request (host + uri, read while the request head is
  // there), for its header_filter, which no longer has the head. 0: not taken.
  uint64_t breaker_key = 0;
  // What the logger plugins keep of a request for their log phase, the request head being gone
  // by then (plugins/loggers/capture.h): records tagged by plugin instance. Capacity kept.
  std::string log_capture;
  // The tracing plugin's span for this request and the upstream tries it asked the exchange to
  // record (trace.h).
  Trace trace;

  // One bit of per-request state for each plugin of the chains, for a hook to tell a later
  // phase's hook what it decided (response-rewrite: "this response is rewritten"). The runner
  // points `entry` at the hook it calls.
  void mark() { marks_[entry >> 6] |= uint64_t{1} << (entry & 63); }
  bool marked() const { return (marks_[entry >> 6] >> (entry & 63) & 1) != 0; }
  uint16_t entry = 0;  // 0..63: a global rule's entry; 64..127: the route's
  uint64_t marks_[2] = {0, 0};

  // Two words of per-request state for the entry the runner points at, for what a later
  // phase must undo (limit-conn: the counter it holds until the log phase). A few entries per
  // request; take_words() finds and forgets them.
  static constexpr int kEntryWords = 4;
  bool keep_words(uint64_t a, uint64_t b) {
    if (entry_words_n_ == kEntryWords) {
      return false;
    }
    entry_words_[entry_words_n_++] = {entry, a, b};
    return true;
  }
  bool take_words(uint64_t* a, uint64_t* b) {
    for (int i = 0; i < entry_words_n_; ++i) {
      if (entry_words_[i].entry == entry) {
        *a = entry_words_[i].a;
        *b = entry_words_[i].b;
        entry_words_[i] = entry_words_[--entry_words_n_];
        return true;
      }
    }
    return false;
  }
  bool words_full() const { return entry_words_n_ == kEntryWords; }
  struct EntryWords {
    uint16_t entry;
    uint64_t a, b;
  };
  EntryWords entry_words_[kEntryWords] = {};
  int entry_words_n_ = 0;
  // The coder (gzip, brotli) a header_filter hook chose for the response body, and the state
  // it keeps for this request (a stream lent by a per-worker pool); see BodyCoder. The first
  // hook to choose stands. `coding` is what coders read of the request head (their head()
  // hook): bits of their own, 0 until read.
  const BodyCoder* coder = nullptr;
  CoderState* coder_state = nullptr;
  uint8_t coding = 0;
  // Gives coder_state back and forgets the coder; the log phase and reset() call it, so an
  // aborted response lets go of its stream too.
  void end_coder();

  void reset();
};

// A response body coder (gzip, brotli). Compression must see the head and the body as every
// other plugin left them (nginx's gzip filter runs after every Lua filter), whatever the
// priorities: so a header_filter hook only chooses one (Context::coder), and the runner calls
// start() after every header_filter hook and code() after every body_filter hook with each
// piece. Context::end_coder() gives the state back.
// Thread: any (immutable); per-request state lives in Context::coder_state
class BodyCoder {
 public:
  virtual ~BodyCoder() = default;
  // The head is final but for the coder's edits: make them, or call ctx.end_coder().
  virtual void start(Context& ctx) const = 0;
  virtual void code(Context& ctx, BodyPiece& piece) const = 0;
};

// A coder's per-request state. It does not reach back to its BodyCoder (the snapshot that
// holds the coder may be gone by the time a context is reset), only to its pool.
// Thread: worker
class CoderState {
 public:
  virtual void release() = 0;

 protected:
  ~CoderState() = default;
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
