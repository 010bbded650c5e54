#include "plugins/real_ip/config.h"

#include <fmt/format.h>

#include <vector>

#include "plugins/ip_restriction/config.h"
#include "schema/checks.h"

namespace sluice::plugins::real_ip {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

// core.schema.ip_def entries, as ip-restriction checks its lists.
StatusOr<std::vector<std::string>> ip_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string() || !ip_restriction::matches_ip_def(v[i].get_ref<const std::string&>())) {
      return Status::error(
          fmt::format("failed to validate item {}: object matches none of the required", i + 1));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// APISIX reads any variable and leaves the client as it is when the variable is nil; Sluice
// refuses a name it has no such variable for, which could never take effect.
Status source_var(Conf* c) {
  if (c->source == "http_x_forwarded_for") {
    c->forwarded_for = true;
    return Status::ok();
  }
  if (std::string_view why = router::body_var_reason(c->source); !why.empty()) {
    return Status::error(fmt::format("source \"{}\": {}", c->source, why));
  }
  c->var = router::Var::parse(c->source);
  if (c->var.nil()) {
    return Status::error(fmt::format(
        "source \"{}\" is not a variable Sluice knows (arg_*, http_*, cookie_*, ...)", c->source));
  }
  return Status::ok();
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::vector<std::string> trusted;
  FieldDecoder d(conf);
  d.field("trusted_addresses", &trusted, ip_list);
  d.field("source", &c.source, [](const Json& v) { return schema::as_string(v, 1); });
  d.field("recursive", &c.lookup.recursive, schema::as_bool);
  d.require({"source"});
  if (!d.ok()) {
    return d.status();
  }
  for (const std::string& entry : trusted) {
    auto block = router::parse_cidr(entry);
    if (!block.is_ok()) {
      return block.status();
    }
    c.lookup.trusted.push_back(*block);
  }
  c.has_trusted = !trusted.empty();
  if (!c.has_trusted) {
    // No list: APISIX takes the source from any peer. `recursive` needs the list to tell
    // proxies from clients, as APISIX's does.
    c.lookup.trusted = {*router::parse_cidr("0.0.0.0/0"), *router::parse_cidr("::/0")};
    c.lookup.recursive = false;
  }
  c.lookup.header = "x-forwarded-for";
  if (Status s = source_var(&c); !s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("real-ip has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "trusted_addresses": {
      "type": "array", "minItems": 1,
      "items": {"anyOf": [
        {"title": "IPv4", "type": "string", "format": "ipv4"},
        {"title": "IPv4/CIDR", "type": "string",
         "pattern": "^([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\\.([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])/([12]?[0-9]|3[0-2])$"},
        {"title": "IPv6", "type": "string", "format": "ipv6"},
        {"title": "IPv6/CIDR", "type": "string",
         "pattern": "^([a-fA-F0-9]{0,4}:){1,8}(:[a-fA-F0-9]{0,4}){0,8}([a-fA-F0-9]{0,4})?/[0-9]{1,3}$"}
      ]}
    },
    "source": {"type": "string", "minLength": 1},
    "recursive": {"type": "boolean", "default": false}
  },
  "required": ["source"]
})JSON";

}  // namespace sluice::plugins::real_ip
