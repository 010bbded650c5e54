#pragma once
// The response bodies a worker's `filters` confs are holding until their last piece: one
// buffer per (request, plugin entry), since a request may run response-rewrite twice (a
// global rule and its route).

#include <cstdint>
#include <string>
#include <unordered_map>

#include "plugin/plugin.h"

namespace sluice::plugins::response_rewrite {

// Thread: worker
class HeldBodies final : public plugin::WorkerObject {
 public:
  // The body held for ctx's current entry (Context::entry), made empty on first use.
  std::string& at(const plugin::Context& ctx);
  // Lets go of ctx's current entry's body.
  void release(const plugin::Context& ctx);
  size_t size() const { return held_.size(); }

  // The worker's instance, made by the plugin's worker_init hook.
  static HeldBodies* of(const plugin::WorkerLocal* local);
  static void worker_init(plugin::Shared& shared, plugin::WorkerLocal& local);

 private:
  struct Key {
    const plugin::Context* ctx;
    uint16_t entry;
    bool operator==(const Key& o) const { return ctx == o.ctx && entry == o.entry; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<const void*>()(k.ctx) * 31 + k.entry; }
  };
  std::unordered_map<Key, std::string, KeyHash> held_;
};

}  // namespace sluice::plugins::response_rewrite
