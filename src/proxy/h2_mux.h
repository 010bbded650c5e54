#pragma once
// The HTTP/2 upstream connections of a worker that carry streams now (gRPC tries): several
// tries to the same node (and, over TLS, server name and client context) share one
// connection, each its own stream, up to the server's SETTINGS_MAX_CONCURRENT_STREAMS (and
// kMaxStreams). A connection left with no stream goes back to the keep-alive pool (Pool), or
// is closed when it broke. The connection's events go to every try on it; a try's own state
// (its stream, head, body, trailers) stays on the try (H2UpstreamRequest).

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/event_loop.h"
#include "proxy/pool.h"
#include "proxy/upstream_conn.h"
#include "proxy/upstream_request.h"

namespace sluice::proxy {

// Streams one shared connection carries at most at once, whatever the server allows.
inline constexpr uint32_t kMaxStreams = 100;

// One connection while tries use it. An IoHandler only so the loop can destroy it after the
// current batch (its events may still be fanning out when its last try leaves).
// Thread: worker
class H2Shared final : public io::IoHandler, public UpstreamOwner {
 public:
  void on_io(uint32_t) override {}
  // The connection has news: every try on it is told (each looks at its own stream).
  void on_upstream_event() override;

  std::unique_ptr<UpstreamConn> conn;
  std::vector<UpstreamOwner*> owners;  // the tries' owners (exchanges), one per stream
};

// Thread: worker
class H2Mux {
 public:
  H2Mux(io::EventLoop& loop, Pool& pool) : loop_(loop), pool_(pool) {}
  ~H2Mux();

  // A connection to `key` with room for one more stream, or null.
  H2Shared* find(const std::string& key);
  // Makes `c` (new, or from the pool) shared under `key`.
  H2Shared* add(const std::string& key, std::unique_ptr<UpstreamConn> c);
  void attach(H2Shared* s, UpstreamOwner* owner) { s->owners.push_back(owner); }
  // `owner`'s stream ended. The last one out puts the connection back in the pool when
  // `keep` (sound, under its request cap: the caller checked), else closes it.
  void detach(H2Shared* s, UpstreamOwner* owner, bool keep, uint32_t pool_size,
              uint32_t pool_idle_ms);
  size_t busy_count() const;

 private:
  io::EventLoop& loop_;
  Pool& pool_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<H2Shared>>> busy_;
};

}  // namespace sluice::proxy
