#include "plugins/limit_req/config.h"

#include "schema/checks.h"

namespace sluice::plugins::limit_req {

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
  auto s = schema::as_enum(v, {"var", "var_combination", "constant"});
  if (!s.is_ok()) {
    return s.status();
  }
  return *s == "var" ? KeyType::kVar
                     : (*s == "constant" ? KeyType::kConstant : KeyType::kVarCombination);
}

StatusOr<int> code(const Json& v) {
  auto i = as_integer(v, 200, 599);
  if (!i.is_ok()) {
    return i.status();
  }
  return static_cast<int>(*i);
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  Conf c;
  FieldDecoder d(conf);
  d.require({"rate", "burst", "key"});
  d.field("rate", &c.rate, [](const Json& v) { return as_number(v, 0, true); });
  d.field("burst", &c.burst, [](const Json& v) { return as_number(v, 0, false); });
  d.field("key", &c.key, [](const Json& v) { return as_string(v); });
  d.field("key_type", &c.key_type, key_type);
  d.field("rejected_code", &c.rejected_code, code);
  d.field("rejected_msg", &c.rejected_msg, [](const Json& v) { return as_string(v, 1); });
  c.has_rejected_msg = d.has("rejected_msg");
  d.field("nodelay", &c.nodelay, as_bool);
  d.field("allow_degradation", &c.allow_degradation, as_bool);
  if (d.ok()) {
    if (std::string why = limit_count::body_key_reason(c.key_type, c.key); !why.empty()) {
      d.fail(why);
    }
  }
  // APISIX's `rules` (several rates keyed by resolved variables) and rate/burst given as
  // variables: not served; refused rather than ignored.
  if (d.ok() && d.has("rules")) {
    d.fail("rules: not supported by Sluice yet");
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
    "rate": {"type": "number", "exclusiveMinimum": 0},
    "burst": {"type": "number", "minimum": 0},
    "key": {"type": "string"},
    "key_type": {"type": "string", "enum": ["var", "var_combination", "constant"], "default": "var"},
    "policy": {"type": "string", "enum": ["redis", "redis-cluster", "local"], "default": "local"},
    "rejected_code": {"type": "integer", "minimum": 200, "maximum": 599, "default": 503},
    "rejected_msg": {"type": "string", "minLength": 1},
    "nodelay": {"type": "boolean", "default": false},
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
  "required": ["rate", "burst", "key"]
})JSON";

}  // namespace sluice::plugins::limit_req
