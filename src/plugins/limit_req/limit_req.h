#pragma once
// limit-req: APISIX's leaky bucket per key, in the access phase (priority 1001). Requests over
// `rate` but within `burst` wait (suspended, resumed from a timer on the worker's loop) unless
// `nodelay`; beyond the burst they are rejected. `local` keeps one bucket per key node-wide in
// a WordTable shared by every worker; `redis` / `redis-cluster` keep it in Redis, updated by one
// script call per request. See README.md beside this file.

#include <memory>
#include <string>

#include "plugin/info.h"
#include "plugins/limit_count/key.h"
#include "plugins/limit_count/redis_policy.h"
#include "plugins/limit_count/word_table.h"
#include "plugins/limit_req/config.h"

namespace sluice::plugins::limit_req {

const plugin::PluginInfo& info();

// The bucket of one key as one word: the time (ns, any clock) at which it drains empty.
// APISIX's state is (excess, last); excess drains at `rate` per second and each admitted
// request adds one, except that a request finding the bucket empty adds nothing. With
// T = last + excess / rate, a request at `now` moves T to max(T + 1/rate, now) and waits
// T' - now, and it is rejected when that wait exceeds burst / rate: the same decisions, in one
// word that one CAS updates. 0 is a fresh key.
// Thread: any (lock-free)
struct Bucket {
  uint64_t interval = 0;  // 1 / rate, in clock units
  uint64_t limit = 0;     // burst / rate: the longest admitted wait
  // The wait for a request at `now` (admitted), or -1 (rejected, nothing changed).
  int64_t incoming(uint64_t* word, uint64_t now) const;
};

// Thread: any (immutable; the buckets it points at are lock-free)
class LimitReq final : public plugin::Plugin {
 public:
  LimitReq(Conf conf, std::string scope, std::shared_ptr<limit_count::WordTable> table);
  void set_per_route(bool on) { per_route_ = on; }
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

  const Conf& conf() const { return conf_; }
  // A verdict from the bucket: the wait in ns, or < 0 for rejected. kPending means "wait
  // that long": the caller suspends the request (or keeps it suspended) for it.
  plugin::Action verdict(plugin::Context& ctx, int64_t wait_ns) const;
  plugin::Action failed(plugin::Context& ctx) const;

 private:
  plugin::Action redis_incoming(plugin::Context& ctx, std::string_view key) const;

  Conf conf_;
  std::string scope_;  // "route/1:<conf hash>": with the key, names the bucket
  uint64_t scope_hash_ = 0;
  limit_count::KeyBuilder key_;
  std::shared_ptr<limit_count::WordTable> table_;  // policy local
  Bucket local_;                                   // in ns
  Bucket remote_;                                  // in us, for redis
  std::string rejected_body_;
  limit_count::RedisTarget redis_;
  std::string redis_prefix_;  // "limit_req:<scope>:"
  bool per_route_ = false;
};

}  // namespace sluice::plugins::limit_req
