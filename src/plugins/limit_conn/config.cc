#include "plugins/limit_conn/config.h"

#include "schema/checks.h"

namespace sluice::plugins::limit_conn {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::as_bool;
using schema::as_integer;
using schema::as_number;
using schema::as_string;
using schema::FieldDecoder;

namespace {

StatusOr<KeyType> key_type(const Json& v) {
  auto s = schema::as_enum(v, {"var", "var_combination"});
  if (!s.is_ok()) {
    return s.status();
  }
  return *s == "var" ? KeyType::kVar : KeyType::kVarCombination;
}

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

StatusOr<int> small_int(const Json& v, int64_t min, int64_t max) {
  auto i = as_integer(v, min, max);
  if (!i.is_ok()) {
    return i.status();
  }
  return static_cast<int>(*i);
}

// APISIX's pattern ^[0-9a-zA-Z|_]+$.
StatusOr<std::string> prefix(const Json& v) {
  auto s = as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  bool ok = !s->empty();
  for (char c : *s) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '|' || c == '_');
  }
  if (!ok) {
    return Status::error("failed to match pattern \"^[0-9a-zA-Z|_]+$\" with " +
                         schema::json_text(v));
  }
  return s;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);
  d.require({"conn", "burst", "default_conn_delay", "key"});
  d.field("conn", &c.conn, positive);
  d.field("burst", &c.burst, [](const Json& v) -> StatusOr<uint64_t> {
    auto i = as_integer(v, 0, INT64_MAX);
    if (!i.is_ok()) {
      return i.status();
    }
    return static_cast<uint64_t>(*i);
  });
  d.field("default_conn_delay", &c.default_conn_delay,
          [](const Json& v) { return as_number(v, 0, true); });
  d.field("only_use_default_delay", &c.only_use_default_delay, as_bool);
  d.field("key", &c.key, [](const Json& v) { return as_string(v); });
  d.field("key_type", &c.key_type, key_type);
  d.field("redis_prefix", &c.redis_prefix, prefix);
  d.field("key_ttl", &c.key_ttl, [](const Json& v) { return small_int(v, 1, 1 << 30); });
  d.field("rejected_code", &c.rejected_code, [](const Json& v) { return small_int(v, 200, 599); });
  d.field("rejected_msg", &c.rejected_msg, [](const Json& v) { return as_string(v, 1); });
  c.has_rejected_msg = d.has("rejected_msg");
  d.field("allow_degradation", &c.allow_degradation, as_bool);
  if (d.ok()) {
    if (std::string why = limit_count::body_key_reason(c.key_type, c.key); !why.empty()) {
      d.fail(why);
    }
  }
  if (!d.ok()) {
    return d.status();
  }
  Status s = limit_count::parse_policy(conf, &c.redis);
  if (!s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return Status::ok();
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "conn": {"type": "integer", "exclusiveMinimum": 0},
    "burst": {"type": "integer", "minimum": 0},
    "default_conn_delay": {"type": "number", "exclusiveMinimum": 0},
    "only_use_default_delay": {"type": "boolean", "default": false},
    "key": {"type": "string"},
    "key_type": {"type": "string", "enum": ["var", "var_combination"], "default": "var"},
    "policy": {"type": "string", "enum": ["redis", "redis-cluster", "local"], "default": "local"},
    "redis_prefix": {"type": "string", "minLength": 0, "default": "limit_conn",
                     "pattern": "^[0-9a-zA-Z|_]+$"},
    "key_ttl": {"type": "integer", "minimum": 1, "default": 3600},
    "rejected_code": {"type": "integer", "minimum": 200, "maximum": 599, "default": 503},
    "rejected_msg": {"type": "string", "minLength": 1},
    "allow_degradation": {"type": "boolean", "default": false},
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
  "required": ["conn", "burst", "default_conn_delay", "key"]
})JSON";

}  // namespace sluice::plugins::limit_conn
