// decode_upstream: APISIX 3.x's upstream schema, plus the checks APISIX makes in code
// (chash needs a key, rewrite needs upstream_host, tls certificates parse).

#include <fmt/format.h>

#include <cctype>

#include "config/field_decoder.h"
#include "config/upstream_checks.h"
#include "config/upstream_nodes.h"
#include "config/upstream_tls.h"
#include "router/expr.h"
#include "upstream/hash_key.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

StatusOr<KeepalivePoolConf> as_keepalive_pool(const Json& v) {
  KeepalivePoolConf pool;
  FieldDecoder d(v);
  d.field("size", &pool.size, [](const Json& x) { return as_integer(x, 1); });
  d.field("idle_timeout", &pool.idle_timeout, [](const Json& x) { return as_number(x, 0, false); });
  d.field("requests", &pool.requests, [](const Json& x) { return as_integer(x, 1); });
  if (!d.ok()) {
    return d.status();
  }
  return pool;
}

template <typename E>
StatusOr<E> as_enum_value(const Json& v,
                          std::initializer_list<std::pair<std::string_view, E>> map) {
  if (!v.is_string()) {
    return wrong_type("string", v);
  }
  for (const auto& [name, value] : map) {
    if (name == v.get_ref<const std::string&>()) {
      return value;
    }
  }
  return Status::error("matches none of the enum values");
}

StatusOr<BalancerType> as_balancer(const Json& v) {
  return as_enum_value<BalancerType>(v, {{"roundrobin", BalancerType::kRoundRobin},
                                         {"chash", BalancerType::kChash},
                                         {"least_conn", BalancerType::kLeastConn},
                                         {"ewma", BalancerType::kEwma}});
}

StatusOr<PassHost> as_pass_host(const Json& v) {
  return as_enum_value<PassHost>(
      v, {{"pass", PassHost::kPass}, {"node", PassHost::kNode}, {"rewrite", PassHost::kRewrite}});
}

void decode_balancing_fields(FieldDecoder& d, UpstreamConf* u) {
  d.field("type", &u->type, as_balancer);
  d.field("nodes", &u->nodes, decode_upstream_nodes);
  d.field("retries", &u->retries, [](const Json& v) { return as_integer(v, 0); });
  d.field("retry_timeout", &u->retry_timeout, [](const Json& v) { return as_number(v, 0, false); });
  d.field("hash_on", &u->hash_on, [](const Json& v) {
    return as_enum(v, {"vars", "header", "cookie", "consumer", "vars_combinations"});
  });
  d.field("key", &u->key, [](const Json& v) { return as_string(v); });
  // The typed form for the snapshot; the JSON is kept as sent, for GET.
  d.field("checks", &u->health_checks,
          [u](const Json& v) -> StatusOr<std::shared_ptr<const health::Checks>> {
            auto c = decode_checks(v);
            if (!c) {
              return c.status();
            }
            u->checks = v;
            return std::make_shared<const health::Checks>(std::move(c).value());
          });
}

void decode_connection_fields(FieldDecoder& d, UpstreamConf* u) {
  d.field("timeout", &u->timeout, as_timeout);
  d.field("keepalive_pool", &u->keepalive_pool, as_keepalive_pool);
  d.field("pass_host", &u->pass_host, as_pass_host);
  d.field("upstream_host", &u->upstream_host, as_host);
  d.field("scheme", &u->scheme, [](const Json& v) -> StatusOr<std::string> {
    return as_enum(v, {"http", "https", "grpc", "grpcs"});
  });
  d.field("tls", &u->tls, decode_upstream_tls);
}

void check_upstream_shape(FieldDecoder& d) {
  if (!d.has("nodes")) {
    d.fail("value should match only one schema, but matches none (an upstream needs nodes)");
  }
}

}  // namespace

namespace {

// APISIX's upstream_hash_vars_schema and upstream_hash_header_schema (schema_def.lua), checked
// as its check_upstream_conf does; the message is the jsonschema library's.
constexpr std::string_view kHashVarsPattern =
    "^((uri|server_name|server_addr|request_uri|remote_port|remote_addr|query_string|host|"
    "hostname)|arg_[0-9a-zA-z_-]+)$";
constexpr std::string_view kHashHeaderPattern = "^[a-zA-Z0-9-_]+$";

bool hash_vars_key(std::string_view k) {
  for (std::string_view n : {"uri", "server_name", "server_addr", "request_uri", "remote_port",
                             "remote_addr", "query_string", "host", "hostname"}) {
    if (k == n) {
      return true;
    }
  }
  if (!k.starts_with("arg_") || k.size() == 4) {
    return false;
  }
  for (char c : k.substr(4)) {  // [0-9a-zA-z_-]: A-z takes [ \ ] ^ and ` too
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'z') || c == '_' ||
          c == '-')) {
      return false;
    }
  }
  return true;
}

bool hash_header_key(std::string_view k) {
  if (k.empty()) {
    return false;
  }
  for (char c : k) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

Status chash_key_rules(const UpstreamConf& u) {
  if (u.hash_on == "vars") {
    if (!hash_vars_key(u.key)) {
      return Status::error(
          fmt::format("invalid configuration: failed to match pattern \"{}\" with \"{}\"",
                      kHashVarsPattern, u.key));
    }
    for (std::string_view n : {"server_name", "server_addr", "remote_port", "hostname"}) {
      if (u.key == n) {  // APISIX takes them; Sluice would hash a nil value
        return Status::error(fmt::format(
            "invalid configuration: chash key {} is not supported by Sluice yet", u.key));
      }
    }
  } else if (u.hash_on == "vars_combinations") {
    if (std::string_view var = router::body_var_in_template(u.key); !var.empty()) {
      return Status::error(
          fmt::format("invalid configuration: chash key variable {} is not "
                      "supported yet: {}",
                      var, router::body_var_reason(var)));
    }
    // Any other variable Sluice cannot read would hash as "", every request to one node.
    auto key = upstream::HashKey::compile(upstream::HashOn::kVarsCombinations, u.key);
    if (std::string_view var = key.unreadable_var(); !var.empty()) {
      return Status::error(fmt::format(
          "invalid configuration: chash key variable {} is not supported by Sluice", var));
    }
  } else if ((u.hash_on == "header" || u.hash_on == "cookie") && !hash_header_key(u.key)) {
    return Status::error(
        fmt::format("invalid configuration: failed to match pattern \"{}\" with \"{}\"",
                    kHashHeaderPattern, u.key));
  }
  return Status::ok();
}

}  // namespace

Status check_upstream_rules(const UpstreamConf& u) {
  if (u.pass_host == PassHost::kRewrite && u.upstream_host.empty()) {
    return Status::error("`upstream_host` can't be empty when `pass_host` is `rewrite`");
  }
  if (Status st = check_upstream_tls(u); !st.is_ok()) {
    return st;
  }
  if (u.type == BalancerType::kChash && u.hash_on != "consumer" && u.key.empty()) {
    return Status::error("missing key");
  }
  if (u.type == BalancerType::kChash) {
    return chash_key_rules(u);
  }
  return Status::ok();
}

StatusOr<UpstreamConf> decode_upstream_fields(const Json& obj) {
  UpstreamConf u;
  FieldDecoder d(obj);
  for (const char* name : {"discovery_type", "service_name", "discovery_args"}) {
    d.unsupported(name, fmt::format("service discovery is not supported (found {})", name));
  }
  d.only({"id", "name", "desc", "labels", "create_time", "update_time", "type", "nodes", "retries",
          "retry_timeout", "timeout", "keepalive_pool", "pass_host", "upstream_host", "scheme",
          "tls", "hash_on", "key", "checks"});
  decode_common_fields(d, &u);
  decode_balancing_fields(d, &u);
  decode_connection_fields(d, &u);
  check_upstream_shape(d);
  if (!d.ok()) {
    return d.status();
  }
  fill_default_ports(&u.nodes, u.scheme);
  return u;
}

StatusOr<UpstreamConf> decode_upstream(const Json& obj) {
  return no_throw([&]() -> StatusOr<UpstreamConf> {
    auto u = decode_upstream_fields(obj);
    if (!u.is_ok()) {
      return invalid_configuration(u.status());
    }
    if (Status st = check_upstream_rules(*u); !st.is_ok()) {
      return st;
    }
    return u;
  });
}

}  // namespace sluice::config
