// decode_route: APISIX 3.x's route schema.

#include <fmt/format.h>

#include "config/field_decoder.h"
#include "config/resources.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

StatusOr<std::string> as_uri(const Json& v) {
  auto s = as_string(v, 1, 4096);
  if (s.is_ok() && s->front() != '/') {
    return Status::error(fmt::format(R"(failed to match pattern "^/" with "{}")", *s));
  }
  return s;
}

StatusOr<std::string> as_method(const Json& v) {
  return as_enum(
      v, {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"});
}

StatusOr<std::vector<std::string>> as_one(StatusOr<std::string> s) {
  if (!s.is_ok()) {
    return s.status();
  }
  return std::vector<std::string>{std::move(s).value()};
}

// `a` and `b` are two spellings of one field (uri | uris): at most one may be given.
void exclusive(FieldDecoder& d, const char* a, const char* b) {
  if (d.has(a) && d.has(b)) {
    d.fail(fmt::format("{}both schemas 1 and 2 ({} and {} are mutually exclusive)", kOnlyOneSchema,
                       a, b));
  }
}

void decode_match_fields(FieldDecoder& d, RouteConf* r) {
  auto non_empty = [](const Json& v) { return as_string(v, 1); };
  d.field("uri", &r->uris, [](const Json& v) { return as_one(as_uri(v)); });
  d.field("uris", &r->uris, [](const Json& v) { return as_string_array(v, as_uri); });
  d.field("host", &r->hosts, [](const Json& v) { return as_one(as_host(v)); });
  d.field("hosts", &r->hosts, [](const Json& v) { return as_string_array(v, as_host); });
  d.field("remote_addr", &r->remote_addrs, [&](const Json& v) { return as_one(non_empty(v)); });
  d.field("remote_addrs", &r->remote_addrs,
          [&](const Json& v) { return as_string_array(v, non_empty); });
  d.field("methods", &r->methods, [](const Json& v) { return as_string_array(v, as_method, 0); });
  d.field("priority", &r->priority, [](const Json& v) { return as_integer(v); });
  d.field("vars", &r->vars, as_array);
}

void decode_action_fields(FieldDecoder& d, RouteConf* r) {
  d.field("plugins", &r->plugins, as_object);
  d.field("upstream", &r->upstream, decode_upstream_fields);
  d.field("upstream_id", &r->upstream_id, as_id);
  d.field("service_id", &r->service_id, as_id);
  d.field("plugin_config_id", &r->plugin_config_id, as_id);
  d.field("timeout", &r->timeout, as_timeout);
  d.field("enable_websocket", &r->enable_websocket, as_bool);
  d.field("status", &r->status, as_enable_status);
}

void check_route_shape(FieldDecoder& d) {
  exclusive(d, "uri", "uris");
  if (!d.has("uri") && !d.has("uris")) {
    d.fail(std::string(kOnlyOneSchema) + "none (a route needs uri or uris)");
  }
  exclusive(d, "host", "hosts");
  exclusive(d, "remote_addr", "remote_addrs");
  bool acts = false;
  for (const char* name :
       {"plugins", "upstream", "upstream_id", "service_id", "plugin_config_id"}) {
    acts = acts || d.has(name);
  }
  if (!acts) {
    d.fail(
        "route needs at least one of plugins, upstream, upstream_id, service_id, "
        "plugin_config_id");
  }
}

StatusOr<RouteConf> decode_route_fields(const Json& obj) {
  RouteConf r;
  FieldDecoder d(obj);
  d.unsupported("script", "script is not supported");
  d.unsupported("filter_func",
                "filter_func is not supported: it is a Lua function run on each request, and "
                "Sluice runs no Lua; express the condition with vars instead");
  d.only({"id",          "name",
          "desc",        "labels",
          "create_time", "update_time",
          "uri",         "uris",
          "host",        "hosts",
          "remote_addr", "remote_addrs",
          "methods",     "priority",
          "vars",        "plugins",
          "upstream",    "upstream_id",
          "service_id",  "plugin_config_id",
          "timeout",     "enable_websocket",
          "status"});
  decode_common_fields(d, &r);
  decode_match_fields(d, &r);
  decode_action_fields(d, &r);
  check_route_shape(d);
  Status s = finish_decode(d, r.upstream, r.plugins);
  if (!s.is_ok()) {
    return s;
  }
  return r;
}

}  // namespace

StatusOr<RouteConf> decode_route(const Json& obj) {
  return no_throw([&] { return decode_route_fields(obj); });
}

}  // namespace sluice::config
