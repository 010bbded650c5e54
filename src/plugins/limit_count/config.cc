#include "plugins/limit_count/config.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "router/expr.h"
#include "schema/checks.h"

namespace sluice::plugins::limit_count {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_bool;
using schema::as_enum;
using schema::as_integer;
using schema::as_string;
using schema::FieldDecoder;

namespace {

// An integer with exclusiveMinimum 0: the type is checked first, as jsonschema does.
StatusOr<uint64_t> positive(const Json& v) {
  auto i = as_integer(v, INT64_MIN, INT64_MAX);
  if (!i.is_ok()) {
    return i.status();
  }
  if (*i <= 0) {
    return Status::error("expected " + schema::json_text(v) + " to be greater than 0");
  }
  return static_cast<uint64_t>(*i);
}

StatusOr<KeyType> key_type(const Json& v) {
  auto s = as_enum(v, {"var", "var_combination", "constant"});
  if (!s.is_ok()) {
    return s.status();
  }
  return *s == "var" ? KeyType::kVar
                     : (*s == "constant" ? KeyType::kConstant : KeyType::kVarCombination);
}

StatusOr<Policy> policy(const Json& v) {
  auto s = as_enum(v, {"local", "redis", "redis-cluster"});
  if (!s.is_ok()) {
    return s.status();
  }
  return *s == "local" ? Policy::kLocal : (*s == "redis" ? Policy::kRedis : Policy::kRedisCluster);
}

StatusOr<int> small_int(const Json& v, int64_t min, int64_t max) {
  auto i = as_integer(v, min, max);
  if (!i.is_ok()) {
    return i.status();
  }
  return static_cast<int>(*i);
}

void decode_redis(FieldDecoder& d, Conf* c) {
  d.field("redis_username", &c->redis_username, [](const Json& v) { return as_string(v, 1); });
  d.field("redis_password", &c->redis_password, [](const Json& v) { return as_string(v, 0); });
  d.field("redis_timeout", &c->redis_timeout,
          [](const Json& v) { return small_int(v, 1, 3600000); });
  if (c->policy == Policy::kRedis) {
    d.require({"redis_host"});
    d.field("redis_host", &c->redis_host, [](const Json& v) { return as_string(v, 2); });
    d.field("redis_port", &c->redis_port, [](const Json& v) { return small_int(v, 1, 65535); });
    d.field("redis_database", &c->redis_database,
            [](const Json& v) { return small_int(v, 0, 1 << 20); });
  } else if (c->policy == Policy::kRedisCluster) {
    d.require({"redis_cluster_nodes", "redis_cluster_name"});
    d.field("redis_cluster_nodes", &c->redis_cluster_nodes, [](const Json& v) {
      return schema::as_string_array(
          v, [](const Json& s) { return as_string(s, 2, 100); }, 1);
    });
    d.field("redis_cluster_name", &c->redis_cluster_name,
            [](const Json& v) { return as_string(v, 1); });
  }
}

// APISIX's schema holds the redis fields in `if policy == redis then {...} else if policy ==
// redis-cluster then {...}`, so its jsonschema reports only which clause failed: that text
// first (scripts match on it), then what is wrong.
Status redis_error(Policy policy, const Status& what) {
  if (policy == Policy::kLocal) {
    return what;
  }
  return Status::error(fmt::format("{} clause did not match ({})",
                                   policy == Policy::kRedis ? "then" : "else", what.message()));
}

}  // namespace

// A key variable read from the request body (post_arg_*, graphql_*): APISIX reads the body for
// it; Sluice does not, so the key would always be nil. The reason, or empty.
std::string body_key_reason(KeyType type, const std::string& key) {
  auto reason = [](std::string_view var) -> std::string {
    std::string_view why = router::body_var_reason(var);
    return why.empty() ? std::string()
                       : fmt::format("key variable {} is not supported yet: {}", var, why);
  };
  if (type == KeyType::kVar) {
    return reason(key);
  }
  if (type != KeyType::kVarCombination) {
    return {};
  }
  return reason(router::body_var_in_template(key));
}

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);
  d.require({"count", "time_window"});
  d.field("count", &c.count, positive);
  d.field("time_window", &c.time_window, positive);
  d.field("key_type", &c.key_type, key_type);
  d.field("key", &c.key, [](const Json& v) { return as_string(v, 1); });
  d.field("rejected_code", &c.rejected_code, [](const Json& v) { return small_int(v, 200, 599); });
  d.field("rejected_msg", &c.rejected_msg, [](const Json& v) { return as_string(v, 1); });
  c.has_rejected_msg = d.has("rejected_msg");
  d.field("policy", &c.policy, policy);
  d.field("allow_degradation", &c.allow_degradation, as_bool);
  d.field("show_limit_quota_header", &c.show_limit_quota_header, as_bool);
  d.field("group", &c.group, [](const Json& v) { return as_string(v, 1); });
  bool tls = false;
  d.field("redis_ssl", &tls, as_bool);
  if (tls) {
    d.fail("redis_ssl: TLS to Redis is not supported by Sluice yet");
  }
  if (d.ok()) {
    if (std::string why = body_key_reason(c.key_type, c.key); !why.empty()) {
      d.fail(why);
    }
  }
  if (!d.ok()) {
    return d.status();
  }
  decode_redis(d, &c);
  if (!d.ok()) {
    return redis_error(c.policy, d.status());
  }
  return c;
}

Status parse_policy(const Json& conf, Conf* c) {
  FieldDecoder d(conf);
  d.field("policy", &c->policy, policy);
  bool tls = false;
  d.field("redis_ssl", &tls, as_bool);
  if (tls) {
    d.fail("redis_ssl: TLS to Redis is not supported by Sluice yet");
  }
  if (!d.ok()) {
    return d.status();
  }
  decode_redis(d, c);
  return d.ok() ? Status::ok() : redis_error(c->policy, d.status());
}

namespace {

// The fields APISIX compares (its schema's properties and the policy's redis ones), with
// defaults applied, as its check_schema sees them after core.schema.check fills them in.
bool same_group_conf(const Conf& a, const Conf& b) {
  return a.count == b.count && a.time_window == b.time_window && a.key_type == b.key_type &&
         a.key == b.key && a.rejected_code == b.rejected_code &&
         a.has_rejected_msg == b.has_rejected_msg && a.rejected_msg == b.rejected_msg &&
         a.policy == b.policy && a.allow_degradation == b.allow_degradation &&
         a.show_limit_quota_header == b.show_limit_quota_header && a.group == b.group &&
         a.redis_host == b.redis_host && a.redis_port == b.redis_port &&
         a.redis_username == b.redis_username && a.redis_password == b.redis_password &&
         a.redis_database == b.redis_database && a.redis_timeout == b.redis_timeout &&
         a.redis_cluster_nodes == b.redis_cluster_nodes &&
         a.redis_cluster_name == b.redis_cluster_name;
}

}  // namespace

// APISIX's check_schema remembers the first conf it checks for each group (group_conf_lru, per
// process) and refuses any later conf of that group that differs: a group is one counter,
// so it has one conf. Sluice remembers it for the process's life.
Status check_group(const Conf& c) {
  static std::mutex mu;
  static std::unordered_map<std::string, Conf> first;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, added] = first.emplace(c.group, c);
  if (!added && !same_group_conf(it->second, c)) {
    return Status::error("group conf mismatched");
  }
  return Status::ok();
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    // APISIX's metadata renames the X-RateLimit-* headers; refused rather than ignored.
    if (!conf.empty()) {
      return Status::error(
          "limit-count metadata (limit_header, remaining_header, reset_header) is not "
          "supported by Sluice yet");
    }
    return Status::ok();
  }
  auto c = parse(conf);
  if (!c.is_ok()) {
    return c.status();
  }
  return c->group.empty() ? Status::ok() : check_group(*c);
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "count": {"type": "integer", "exclusiveMinimum": 0},
    "time_window": {"type": "integer", "exclusiveMinimum": 0},
    "group": {"type": "string"},
    "key": {"type": "string", "default": "remote_addr"},
    "key_type": {"type": "string", "enum": ["var", "var_combination", "constant"], "default": "var"},
    "rejected_code": {"type": "integer", "minimum": 200, "maximum": 599, "default": 503},
    "rejected_msg": {"type": "string", "minLength": 1},
    "policy": {"type": "string", "enum": ["local", "redis", "redis-cluster"], "default": "local"},
    "allow_degradation": {"type": "boolean", "default": false},
    "show_limit_quota_header": {"type": "boolean", "default": true},
    "redis_host": {"type": "string", "minLength": 2},
    "redis_port": {"type": "integer", "minimum": 1, "default": 6379},
    "redis_username": {"type": "string", "minLength": 1},
    "redis_password": {"type": "string", "minLength": 0},
    "redis_database": {"type": "integer", "minimum": 0, "default": 0},
    "redis_timeout": {"type": "integer", "minimum": 1, "default": 1000},
    "redis_cluster_nodes": {"type": "array", "minItems": 1,
                            "items": {"type": "string", "minLength": 2, "maxLength": 100}},
    "redis_cluster_name": {"type": "string"}
  },
  "required": ["count", "time_window"]
})JSON";

}  // namespace sluice::plugins::limit_count
