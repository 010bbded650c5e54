#pragma once
// The one watch a process keeps on etcd: its own thread reads the whole prefix once, then
// follows a single watch stream on `<prefix>/` and hands what it learns to the control thread
// as events (a whole new set, or a batch of changes). It re-reads everything when the watch
// was compacted past it, when the cluster's revision went backwards or its id changed (etcd
// wiped or replaced); on a broken stream it moves to the next member at once, then backs off
// exponentially (100 ms doubling to 5 s, with jitter) while no member answers.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.h"
#include "store/store.h"

namespace sluice::etcd {

// Thread: any (value type)
struct WatchEvent {
  enum class Kind { kResync, kChanges };
  Kind kind = Kind::kChanges;
  int64_t revision = 0;                // the store revision this event brings the reader to
  std::vector<store::Entry> entries;   // kResync: every resource under the prefix, by key
  std::vector<store::Change> changes;  // kChanges: in revision order
};

// Thread: the constructor, take(), wait_synced() and the destructor on the owner's thread;
// the watch runs on its own thread.
class Watcher {
 public:
  // `notify` runs on the watch thread after events are queued (post to the owner's loop).
  Watcher(ClientOptions opts, std::string prefix, std::function<void()> notify);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  void start();
  std::vector<WatchEvent> take();
  // Waits up to `ms` for the first full read; true when it arrived.
  bool wait_synced(int ms);
  // Whether the watch is established (apisix_etcd_reachable).
  bool reachable() const { return reachable_.load(std::memory_order_relaxed); }
  uint64_t resyncs() const { return resyncs_.load(std::memory_order_relaxed); }

 private:
  void run();
  common::Status sync(Client& client);
  // Checks the member's revision and cluster against ours (a wiped cluster needs a resync).
  common::Status check_member(Client& client);
  // Follows one watch stream until it breaks; sets need_sync_ when a resync is needed.
  // `healthy` turns true once the stream was established.
  common::Status follow(Client& client, bool* healthy);
  common::Status handle(const Json& msg, bool* created);
  void push(WatchEvent ev);
  void set_reachable(bool up);
  // Sleeps (waking early on stop); false when stopping.
  bool pause(int ms);

  ClientOptions opts_;
  std::string prefix_;  // "<prefix>/"
  std::function<void()> notify_;
  int cancel_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reachable_{false};
  std::atomic<uint64_t> resyncs_{0};

  // Watch thread only.
  bool need_sync_ = true;
  bool events_seen_ = false;  // the current stream delivered events
  int64_t revision_ = 0;
  uint64_t cluster_id_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<WatchEvent> queue_;  // guarded by mu_
  bool synced_ = false;            // guarded by mu_
};

// Splits a watch stream into its JSON objects (one per message, arriving in chunks that need
// not align with them). It remembers where its scan of an incomplete object stopped, so each
// byte is examined once however many chunks a large message takes.
class ObjectSplitter {
 public:
  // Appends the objects `buf` completes to `out` and removes them from `buf`; what is
  // incomplete stays. `buf` is the same buffer every time, only appended to between calls.
  // False when the bytes cannot be a stream of objects, or one exceeds 64 MiB.
  bool feed(std::string* buf, std::vector<std::string>* out);
  size_t bytes_examined() const { return bytes_examined_; }

 private:
  size_t scanned_ = 0;  // bytes of the buffer already examined
  size_t start_ = 0;    // where the object being read begins
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  size_t bytes_examined_ = 0;
};

}  // namespace sluice::etcd
