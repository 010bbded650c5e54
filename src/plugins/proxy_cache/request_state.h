#pragma once
// What proxy-cache keeps for one request across its hooks (a plugin::Held): the key, the
// entry a hit serves and its body source, or the fill a miss writes. Pooled per worker, so a
// hit allocates nothing once the pool and its buffers have grown.

#include <memory>
#include <string>
#include <vector>

#include "io/timer.h"
#include "plugin/plugin.h"
#include "plugins/proxy_cache/disk_zone.h"
#include "plugins/proxy_cache/entry.h"
#include "plugins/proxy_cache/zone.h"

namespace sluice::plugins::proxy_cache {

class ProxyCache;
class StatePool;

// A body held in memory (a memory entry's, or a small disk file read whole): one piece.
// Thread: worker
class MemorySource final : public plugin::BodySource {
 public:
  void set(std::string_view body) { body_ = body; }
  Read next(std::string_view* piece) override;

 private:
  std::string_view body_;  // what is left to hand out
};

// A disk file's body, read a piece at a time as the client takes it; its checksum is checked
// at the end (a mismatch ends the response early and drops the file).
// Thread: worker
class FileSource final : public plugin::BodySource {
 public:
  static constexpr size_t kPiece = 64 << 10;
  void set(DiskZone* zone, DiskZone::Open* open, std::string* buf);
  Read next(std::string_view* piece) override;

 private:
  DiskZone* zone_ = nullptr;
  DiskZone::Open* open_ = nullptr;
  std::string* buf_ = nullptr;
  uint64_t at_ = 0, left_ = 0;
  Checksum sum_;
};

// Thread: worker
struct RequestState final : public plugin::Held {
  enum class Role : uint8_t {
    kNone,   // looked at the cache, passes through (bypass, uncacheable method, waiter's miss)
    kHit,    // answered from the cache
    kFill,   // fetches the key for the cache (and for those waiting on it)
    kStored  // the fill ended
  };
  void release() override;
  // Ends a fill that stored nothing: its waiters go upstream themselves.
  void end_fill();
  // Waits for another request's fill of the key, at most kLockTimeoutMs (nginx's
  // proxy_cache_lock_timeout): then it goes upstream itself, storing nothing.
  static constexpr uint64_t kLockTimeoutMs = 5000;
  void start_wait(plugin::Context& ctx, uint64_t token);
  void stop_wait();
  static void on_lock_timeout(void* self);

  StatePool* pool = nullptr;
  const ProxyCache* plugin = nullptr;
  Role role = Role::kNone;
  bool joined = false;  // the fill is registered in its zone's Fills
  bool convert_head = false;
  std::string key;
  uint64_t h = 0;
  std::string no_cache;  // no_cache's value from the request's variables
  MemoryZone* mem = nullptr;
  DiskZone* disk = nullptr;
  // A hit.
  EntryPtr entry;
  DiskZone::Open open;
  std::vector<http::Header> fields;
  char age[24];
  std::string buf;
  MemorySource mem_source;
  FileSource file_source;
  // Waiting for another's fill.
  io::Timer lock_timer{&RequestState::on_lock_timeout, this};
  plugin::Host* host = nullptr;
  uint64_t wait_token = 0;
  // A fill.
  int gateway_error = 0;  // the gateway's own 502/504, stored whole at its end (disk)
  std::shared_ptr<Entry> building;
  DiskZone::Writer writer;
};

// The request's state when `self` made it (null for another proxy-cache instance's request).
inline RequestState* state_of(const plugin::Context& ctx, const ProxyCache* self) {
  auto* st = static_cast<RequestState*>(ctx.held);
  return st != nullptr && st->plugin == self ? st : nullptr;
}

// Thread: worker
class StatePool final : public plugin::WorkerObject {
 public:
  RequestState* take();
  void give(RequestState* s) { free_.push_back(s); }

 private:
  std::vector<std::unique_ptr<RequestState>> all_;
  std::vector<RequestState*> free_;
};

}  // namespace sluice::plugins::proxy_cache
