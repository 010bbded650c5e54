// config.yaml's apisix.proxy_cache: checked at load (config/gateway_config.cc calls
// check_config_section), carried in plugin_attr["proxy-cache"], read back at start.

#include <fmt/format.h>

#include <cctype>

#include "plugins/proxy_cache/config.h"

namespace sluice::plugins::proxy_cache {

using common::Status;
using common::StatusOr;
using plugin::Json;

namespace {

// An nginx size: bytes, or a number with k, m or g.
StatusOr<uint64_t> size_of(const Json& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    return v.get<uint64_t>();
  }
  std::string s = v.is_string() ? v.get<std::string>() : "";
  uint64_t n = 0, mult = 1;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    n = n * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  if (i + 1 == s.size()) {
    char u = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    mult = u == 'k' ? 1024 : (u == 'm' ? 1 << 20 : (u == 'g' ? 1 << 30 : 0));
  } else if (i != s.size()) {
    mult = 0;
  }
  if (i == 0 || mult == 0) {
    return Status::error(path + ": expected a size (bytes, or a number with k, m or g), got " +
                         v.dump());
  }
  return n * mult;
}

// Seconds: a number, or nginx's "10s" / "5m" / "1h" / "1d".
StatusOr<int64_t> seconds_of(const Json& v) {
  if (v.is_number_integer() && v.get<int64_t>() > 0) {
    return v.get<int64_t>();
  }
  std::string s = v.is_string() ? v.get<std::string>() : "";
  int64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    n = n * 10 + (s[i] - '0');
  }
  int64_t mult = i == s.size() ? 1 : 0;
  if (i + 1 == s.size()) {
    char u = s[i];
    mult = u == 's' ? 1 : (u == 'm' ? 60 : (u == 'h' ? 3600 : (u == 'd' ? 86400 : 0)));
  }
  if (i == 0 || mult == 0 || n <= 0) {
    return Status::error("cache_ttl: expected seconds (10, \"10s\", \"5m\"), got " + v.dump());
  }
  return n * mult;
}

StatusOr<std::vector<int>> levels_of(const Json& v, const std::string& path) {
  std::string s = v.is_string() ? v.get<std::string>() : "";
  std::vector<int> out;
  size_t start = 0;
  while (!s.empty()) {
    size_t colon = s.find(':', start);
    std::string part = s.substr(start, colon == std::string::npos ? colon : colon - start);
    if (part != "1" && part != "2") {
      return Status::error(path + ": expected levels of 1 or 2 characters (\"1:2\"), got " +
                           v.dump());
    }
    out.push_back(part[0] - '0');
    if (colon == std::string::npos) {
      break;
    }
    start = colon + 1;
  }
  if (out.empty() || out.size() > 3) {
    return Status::error(path + ": expected one to three levels (\"1:2\"), got " + v.dump());
  }
  return out;
}

}  // namespace

StatusOr<ZonesConf> zones_from_json(const Json& v) {
  ZonesConf z;
  if (v.contains("cache_ttl")) {
    auto t = seconds_of(v["cache_ttl"]);
    if (!t.is_ok()) {
      return t.status();
    }
    z.cache_ttl = *t;
  }
  if (!v.contains("zones")) {
    z.zones = default_zones().zones;
    return z;
  }
  const Json& zones = v["zones"];
  if (!zones.is_array()) {
    return Status::error("zones: expected a list");
  }
  for (size_t i = 0; i < zones.size(); ++i) {
    const Json& e = zones[i];
    std::string path = fmt::format("zones[{}]", i);
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        e["name"].get<std::string>().empty()) {
      return Status::error(path + ".name: required, a string");
    }
    ZoneConf c;
    c.name = e["name"].get<std::string>();
    for (const ZoneConf& seen : z.zones) {
      if (seen.name == c.name) {
        return Status::error(path + ".name: " + c.name + " is named twice");
      }
    }
    if (!e.contains("memory_size")) {
      return Status::error(path + ".memory_size: required");
    }
    auto m = size_of(e["memory_size"], path + ".memory_size");
    if (!m.is_ok()) {
      return m.status();
    }
    c.memory_size = *m;
    if (e.contains("disk_path")) {
      if (!e["disk_path"].is_string() || e["disk_path"].get<std::string>().empty()) {
        return Status::error(path + ".disk_path: expected a directory");
      }
      c.disk_path = e["disk_path"].get<std::string>();
      auto d = size_of(e.value("disk_size", Json("1g")), path + ".disk_size");
      if (!d.is_ok()) {
        return d.status();
      }
      c.disk_size = *d;
      auto l = levels_of(e.value("cache_levels", Json("1:2")), path + ".cache_levels");
      if (!l.is_ok()) {
        return l.status();
      }
      c.levels = *l;
    } else if (e.contains("disk_size") || e.contains("cache_levels")) {
      return Status::error(path + ": disk_size and cache_levels need a disk_path");
    }
    z.zones.push_back(std::move(c));
  }
  return z;
}

StatusOr<Json> check_config_section(const Json& v) {
  if (!v.is_object()) {
    return Status::error("expected a mapping");
  }
  for (const auto& [k, val] : v.items()) {
    if (k != "cache_ttl" && k != "zones") {
      return Status::error(k + ": not supported");
    }
  }
  auto z = zones_from_json(v);
  if (!z.is_ok()) {
    return z.status();
  }
  Json out = Json::object();
  out["cache_ttl"] = z->cache_ttl;
  Json zones = Json::array();
  for (const ZoneConf& c : z->zones) {
    Json e = {{"name", c.name}, {"memory_size", c.memory_size}};
    if (c.disk()) {
      e["disk_path"] = c.disk_path;
      e["disk_size"] = c.disk_size;
      std::string lv;
      for (int l : c.levels) {
        lv += (lv.empty() ? "" : ":") + std::to_string(l);
      }
      e["cache_levels"] = lv;
    }
    zones.push_back(std::move(e));
  }
  out["zones"] = std::move(zones);
  return out;
}

}  // namespace sluice::plugins::proxy_cache
