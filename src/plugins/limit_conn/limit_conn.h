#pragma once
// limit-conn: concurrent requests per key, counted in the access phase (priority 1003) and
// released in the log phase, which runs exactly once for every request that got past the
// router, whether it was proxied, answered by another plugin or abandoned by its client.
// `local` counts node-wide in a WordTable shared by every worker; `redis` / `redis-cluster`
// keep one sorted set per key. See README.md beside this file.

#include <atomic>
#include <memory>
#include <string>

#include "plugin/info.h"
#include "plugins/limit_conn/config.h"
#include "plugins/limit_count/key.h"
#include "plugins/limit_count/redis_policy.h"
#include "plugins/limit_count/word_table.h"

namespace sluice::plugins::limit_conn {

const plugin::PluginInfo& info();

// One more request in flight on `word` if that keeps it within `max`: the new count, or 0
// (rejected, nothing changed). One CAS: never more than `max` at once, whatever the threads.
uint64_t enter(uint64_t* word, uint64_t max);
void leave(uint64_t* word);

// Thread: any (immutable but for the measured delay, an atomic)
class LimitConn final : public plugin::Plugin {
 public:
  LimitConn(Conf conf, std::string scope, std::shared_ptr<limit_count::WordTable> table);
  void set_per_route(bool on) { per_route_ = on; }
  uint32_t phases() const override {
    return plugin::phase_bit(plugin::Phase::kAccess) | plugin::phase_bit(plugin::Phase::kLog);
  }
  plugin::Action access(plugin::Context& ctx) const override;
  void log(plugin::Context& ctx) const override;

  const Conf& conf() const { return conf_; }
  // The request is the `n`th in flight (admitted): continue, or wait as APISIX's
  // resty.limit.conn says (unit delay x floor((n - 1) / conn)). Returns the wait in ms.
  uint64_t delay_ms(uint64_t n) const;
  plugin::Action rejected(plugin::Context& ctx) const;
  plugin::Action failed(plugin::Context& ctx) const;
  uint64_t unit_delay_ns() const { return unit_delay_ns_.load(std::memory_order_relaxed); }

 private:
  plugin::Action redis_incoming(plugin::Context& ctx, std::string_view key) const;

  Conf conf_;
  std::string scope_;
  uint64_t scope_hash_ = 0;
  limit_count::KeyBuilder key_;
  std::shared_ptr<limit_count::WordTable> table_;
  std::string rejected_body_;
  limit_count::RedisTarget redis_;
  std::string redis_prefix_;  // "<redis_prefix>:<scope>:"
  bool per_route_ = false;
  // resty.limit.conn's unit_delay: default_conn_delay, then the average with each measured
  // latency (unless only_use_default_delay). APISIX keeps one per worker; here one per conf.
  mutable std::atomic<uint64_t> unit_delay_ns_{0};
};

}  // namespace sluice::plugins::limit_conn
