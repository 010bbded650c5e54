#include "plugins/proxy_cache/config.h"

#include <fmt/format.h>

#include <mutex>

#include "schema/checks.h"

namespace sluice::plugins::proxy_cache {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_bool;
using schema::as_enum;
using schema::as_integer;
using schema::as_string;
using schema::FieldDecoder;

namespace {

constexpr char kDefaultZone[] = "disk_cache_one";
constexpr char kVarPattern[] = R"((^[^\$].+$|^\$[0-9a-zA-Z_]+$))";

// APISIX's item pattern: a literal of two or more characters not starting with '$', or one
// variable `$name`.
StatusOr<std::string> key_item(const Json& v) {
  auto s = as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  const std::string& t = *s;
  bool ok = false;
  if (!t.empty() && t[0] != '$') {
    ok = t.size() >= 2;
  } else if (t.size() >= 2) {
    ok = true;
    for (size_t i = 1; i < t.size(); ++i) {
      char c = t[i];
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_');
    }
  }
  if (!ok) {
    return Status::error(fmt::format(R"(failed to match pattern "{}" with "{}")", kVarPattern, t));
  }
  return t;
}

StatusOr<std::vector<std::string>> key_array(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = key_item(v[i]);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(*s);
  }
  return out;
}

StatusOr<uint8_t> methods(const Json& v) {
  auto a = schema::as_string_array(
      v,
      [](const Json& e) {
        return as_enum(e, {"GET", "POST", "HEAD"});
      },
      1);
  if (!a.is_ok()) {
    return a.status();
  }
  uint8_t m = 0;
  for (const std::string& s : *a) {
    m |= s == "GET" ? kGet : (s == "POST" ? kPost : kHead);
  }
  return m;
}

StatusOr<std::vector<int>> statuses(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto n = as_integer(v[i], 200, 599);
    if (!n.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, n.status().message()));
    }
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] == *n) {
        return Status::error(
            fmt::format("expected unique items but items {} and {} are equal", j + 1, i + 1));
      }
    }
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

std::mutex zones_mu;
ZonesConf& zones_slot() {
  static ZonesConf z = default_zones();
  return z;
}

}  // namespace

ZonesConf default_zones() {
  ZonesConf z;
  z.zones.push_back({kDefaultZone, 50 << 20, uint64_t{1} << 30, "/tmp/disk_cache_one", {1, 2}});
  z.zones.push_back({"memory_cache", 50 << 20, 0, "", {}});
  return z;
}

void set_checked_zones(const ZonesConf& z) {
  std::lock_guard lock(zones_mu);
  zones_slot() = z;
}

const ZonesConf& checked_zones() {
  std::lock_guard lock(zones_mu);
  return zones_slot();
}

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);
  d.field("cache_zone", &c.zone, [](const Json& v) { return as_string(v, 1, 100); });
  d.field("cache_strategy", &c.strategy, [](const Json& v) -> StatusOr<Strategy> {
    auto s = as_enum(v, {"disk", "memory"});
    if (!s.is_ok()) {
      return s.status();
    }
    return *s == "disk" ? Strategy::kDisk : Strategy::kMemory;
  });
  d.field("cache_key", &c.cache_key, key_array);
  d.field("cache_http_status", &c.statuses, statuses);
  d.field("cache_method", &c.methods, methods);
  d.field("hide_cache_headers", &c.hide_cache_headers, as_bool);
  d.field("cache_control", &c.cache_control, as_bool);
  d.field("cache_bypass", &c.cache_bypass, key_array);
  d.field("no_cache", &c.no_cache, key_array);
  d.field("cache_ttl", &c.cache_ttl, [](const Json& v) { return as_integer(v, 1, INT32_MAX); });
  // Fields of newer APISIX releases: accepted only with the value Sluice behaves as.
  bool isolation = false, set_cookie = false;
  d.field("consumer_isolation", &isolation, as_bool);
  d.field("cache_set_cookie", &set_cookie, as_bool);
  if (!d.ok()) {
    return d.status();
  }
  if (isolation) {
    return Status::error(
        "consumer_isolation true is not supported: Sluice does not partition the cache by "
        "consumer; put $consumer_name in cache_key instead");
  }
  if (set_cookie) {
    return Status::error(
        "cache_set_cookie true is not supported: Sluice never stores a response carrying "
        "Set-Cookie");
  }
  for (const std::string& k : c.cache_key) {
    if (k == "$request_method") {
      return Status::error("cache_key variable " + k + " unsupported");
    }
  }
  const ZonesConf& zs = checked_zones();
  const ZoneConf* zone = nullptr;
  for (const ZoneConf& z : zs.zones) {
    zone = z.name == c.zone ? &z : zone;
  }
  if (zone == nullptr) {
    return Status::error("cache_zone " + c.zone + " not found");
  }
  if (c.strategy == Strategy::kMemory && c.zone == kDefaultZone) {
    return Status::error("invalid or empty cache_zone for cache_strategy: memory");
  }
  // Sluice's own checks: APISIX would fail at run time (a shared dict that is not there, an
  // nginx cache path used as one).
  if (c.strategy == Strategy::kMemory && zone->disk()) {
    return Status::error("cache_zone " + c.zone +
                         " is a disk zone (it has a disk_path); cache_strategy memory needs a "
                         "zone without one");
  }
  if (c.strategy == Strategy::kDisk && !zone->disk()) {
    return Status::error("cache_zone " + c.zone +
                         " is a memory zone (it has no disk_path); cache_strategy disk needs a "
                         "zone with one");
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({"type":"object","properties":{
"cache_zone":{"type":"string","minLength":1,"maxLength":100,"default":"disk_cache_one"},
"cache_strategy":{"type":"string","enum":["disk","memory"],"default":"disk"},
"cache_key":{"type":"array","minItems":1,"items":{"description":"a key for caching","type":"string","pattern":"(^[^\\$].+$|^\\$[0-9a-zA-Z_]+$)"},"default":["$host","$request_uri"]},
"cache_http_status":{"type":"array","minItems":1,"items":{"description":"http response status","type":"integer","minimum":200,"maximum":599},"uniqueItems":true,"default":[200,301,404]},
"cache_method":{"type":"array","minItems":1,"items":{"description":"supported http method","type":"string","enum":["GET","POST","HEAD"]},"uniqueItems":true,"default":["GET","HEAD"]},
"hide_cache_headers":{"type":"boolean","default":false},
"cache_control":{"type":"boolean","default":false},
"cache_bypass":{"type":"array","minItems":1,"items":{"type":"string","pattern":"(^[^\\$].+$|^\\$[0-9a-zA-Z_]+$)"}},
"no_cache":{"type":"array","minItems":1,"items":{"type":"string","pattern":"(^[^\\$].+$|^\\$[0-9a-zA-Z_]+$)"}},
"cache_ttl":{"type":"integer","minimum":1,"default":300}}})JSON";

}  // namespace sluice::plugins::proxy_cache
