#pragma once
// proxy-cache: caches upstream responses by a key built from variables, in a memory zone or a
// disk zone of config.yaml's apisix.proxy_cache (priority 1085; access, header_filter,
// body_filter, log). A hit answers in the access phase with the stored head and a body the
// exchange streams from memory or from the file; a miss goes upstream while body_filter tees
// the body into the zone; concurrent misses on one key wait for the first one's fill.
// See README.md beside this file.

#include <memory>
#include <string>
#include <vector>

#include "plugin/info.h"
#include "plugins/proxy_cache/config.h"
#include "plugins/proxy_cache/disk_zone.h"
#include "plugins/proxy_cache/request_state.h"
#include "plugins/proxy_cache/zone.h"
#include "router/expr.h"

namespace sluice::plugins::proxy_cache {

const plugin::PluginInfo& info();

// The node's zones, made at start from apisix.proxy_cache (plugin::Shared "proxy-cache/zones").
// Thread: any (each zone locks itself)
struct Zones {
  ZonesConf conf;
  std::vector<std::pair<std::string, std::shared_ptr<MemoryZone>>> memory;
  std::vector<std::pair<std::string, std::shared_ptr<DiskZone>>> disk;
};
std::shared_ptr<Zones> make_zones(const ZonesConf& c);

// Thread: any (immutable)
class ProxyCache final : public plugin::Plugin {
 public:
  ProxyCache(Conf conf, std::shared_ptr<MemoryZone> mem, std::shared_ptr<DiskZone> disk,
             int64_t disk_ttl);
  uint32_t phases() const override;
  plugin::Action access(plugin::Context& ctx) const override;
  void header_filter(plugin::Context& ctx) const override;
  void body_filter(plugin::Context& ctx, plugin::BodyPiece& piece) const override;
  void log(plugin::Context& ctx) const override;

  // A waiter's fill ended (posted to its worker): serve what it stored, or go upstream.
  static void wake(const Waiter& w);

  // The cache key of this request (in `out`); exposed for tests and the benchmark.
  void build_key(plugin::Context& ctx, std::string* out) const;

 private:
  struct Part {
    std::string text;  // a literal, or the variable's name
    router::Var var;
    bool is_var = false;
    bool response = false;  // read in header_filter (upstream_http_*, status, ...)
  };
  static std::vector<Part> compile(const std::vector<std::string>& items);
  // Appends the parts' values (request parts, or response parts) to `out`.
  void append(const std::vector<Part>& parts, plugin::Context& ctx, bool response,
              std::string* out) const;
  static bool set(std::string_view v) { return !v.empty() && v != "0"; }

  plugin::Action lookup_memory(plugin::Context& ctx, RequestState& st) const;
  plugin::Action lookup_disk(plugin::Context& ctx, RequestState& st) const;
  // The miss path: become the key's filler, or wait for the one in flight. `look_again`: an
  // entry stored meanwhile answers the request (not for a request that found it stale).
  plugin::Action join(plugin::Context& ctx, RequestState& st, bool look_again = true) const;
  plugin::Action serve_memory(plugin::Context& ctx, RequestState& st) const;
  // False when the file turned out bad (a miss).
  bool serve_disk(plugin::Context& ctx, RequestState& st) const;
  void hit_fields(plugin::Context& ctx, RequestState& st, const Entry& e) const;
  void after_wait(plugin::Context& ctx, RequestState& st, uint64_t token) const;
  // The gateway's own 502/504 (disk strategy), written once its body is whole.
  void store_gateway_error(RequestState& st, const plugin::BodyPiece& piece) const;
  // The response's TTL when it may be stored, else -1.
  int64_t storable(plugin::Context& ctx, RequestState& st) const;

  Conf conf_;
  std::shared_ptr<MemoryZone> mem_;
  std::shared_ptr<DiskZone> disk_;
  int64_t disk_ttl_;
  std::vector<Part> key_, bypass_, no_cache_;
  bool no_cache_response_ = false;  // no_cache reads a response variable
};

}  // namespace sluice::plugins::proxy_cache
