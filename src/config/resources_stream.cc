// decode_stream_route: APISIX 3.x's stream_route schema. Stream routes are stored only.

#include "config/field_decoder.h"
#include "config/resources.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

// xRPC's `protocol` ({name, superior_id, conf, logger}), kept verbatim once its shape is right.
StatusOr<Json> as_protocol(const Json& v) {
  FieldDecoder d(v);
  d.only({"name", "superior_id", "conf", "logger"});
  d.require({"name"});
  std::string text;
  Json unused;
  d.field("name", &text, [](const Json& x) { return as_string(x); });
  d.field("superior_id", &text, as_id);
  d.field("conf", &unused, as_object);
  d.field("logger", &unused, as_array);
  if (!d.ok()) {
    return d.status();
  }
  return v;
}

void decode_stream_match(FieldDecoder& d, StreamRouteConf* r) {
  d.field("remote_addr", &r->remote_addr, as_ip_or_cidr);
  d.field("server_addr", &r->server_addr, as_ip_or_cidr);
  d.field("server_port", &r->server_port, [](const Json& v) { return as_integer(v, 1, 65535); });
  d.field("sni", &r->sni, as_sni);
}

void decode_stream_action(FieldDecoder& d, StreamRouteConf* r) {
  d.field("upstream", &r->upstream, decode_upstream_fields);
  d.field("upstream_id", &r->upstream_id, as_id);
  d.field("service_id", &r->service_id, as_id);
  d.field("plugins", &r->plugins, as_object);
  d.field("protocol", &r->protocol, as_protocol);
}

StatusOr<StreamRouteConf> decode_stream_route_fields(const Json& obj) {
  StreamRouteConf r;
  FieldDecoder d(obj);
  d.only({"id", "name", "desc", "labels", "create_time", "update_time", "remote_addr",
          "server_addr", "server_port", "sni", "upstream", "upstream_id", "service_id", "plugins",
          "protocol"});
  decode_common_fields(d, &r);
  decode_stream_match(d, &r);
  decode_stream_action(d, &r);
  Status s = finish_decode(d, r.upstream, r.plugins, PluginUse::kStream);
  if (!s.is_ok()) {
    return s;
  }
  return r;
}

}  // namespace

StatusOr<StreamRouteConf> decode_stream_route(const Json& obj) {
  return no_throw([&] { return decode_stream_route_fields(obj); });
}

}  // namespace sluice::config
