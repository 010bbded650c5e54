#pragma once
// proxy-cache's conf, checked as APISIX's schema and check_schema do (apisix/plugins/
// proxy-cache/init.lua), and the zones of config.yaml's apisix.proxy_cache it names.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::proxy_cache {

enum class Strategy : uint8_t { kDisk, kMemory };

// Bits of Conf::methods.
inline constexpr uint8_t kGet = 1, kPost = 2, kHead = 4;

struct Conf {
  Strategy strategy = Strategy::kDisk;
  std::string zone = "disk_cache_one";
  std::vector<std::string> cache_key = {"$host", "$request_uri"};
  std::vector<std::string> cache_bypass;  // empty: none
  std::vector<std::string> no_cache;      // empty: none
  uint8_t methods = kGet | kHead;
  std::vector<int> statuses = {200, 301, 404};
  bool hide_cache_headers = false;
  bool cache_control = false;
  int64_t cache_ttl = 300;  // seconds, memory strategy
};

// One zone of apisix.proxy_cache.zones. A zone with a disk_path is a disk zone (nginx's
// proxy_cache_path); one without is a memory zone (a lua_shared_dict in APISIX).
struct ZoneConf {
  std::string name;
  uint64_t memory_size = 0;
  uint64_t disk_size = 0;
  std::string disk_path;
  std::vector<int> levels;  // cache_levels "1:2"
  bool disk() const { return !disk_path.empty(); }
};

struct ZonesConf {
  int64_t cache_ttl = 10;  // apisix.proxy_cache.cache_ttl: the disk strategy's default TTL
  std::vector<ZoneConf> zones;
};

// APISIX's config-default.yaml: disk_cache_one (50m, 1G, /tmp/disk_cache_one, 1:2) and
// memory_cache (50m), cache_ttl 10s.
ZonesConf default_zones();
// Reads plugin_attr["proxy-cache"] as config.yaml's apisix.proxy_cache was turned into it
// (config/gateway_config.cc): {cache_ttl, zones: [{name, memory_size, ...}]}.
common::StatusOr<ZonesConf> zones_from_json(const plugin::Json& v);
// Checks config.yaml's apisix.proxy_cache and gives it back in plugin_attr's form. Errors name
// the field (`zones[0].disk_size: ...`).
common::StatusOr<plugin::Json> check_config_section(const plugin::Json& v);

// The zones conf checks look at: set at start (process_init), APISIX's defaults before.
// Thread: control
void set_checked_zones(const ZonesConf& z);
const ZonesConf& checked_zones();

common::Status check(const plugin::Json& conf, plugin::PluginUse use);
common::StatusOr<Conf> parse(const plugin::Json& conf);
extern const char kSchema[];

}  // namespace sluice::plugins::proxy_cache
