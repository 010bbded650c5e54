// valid_id and decode_service; routes and upstreams have their own files.

#include "config/resources.h"

#include <cctype>

#include "config/field_decoder.h"

namespace sluice::config {

using common::StatusOr;

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) {
    return false;
  }
  for (char c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

namespace {

StatusOr<ServiceConf> decode_service_fields(const Json& obj) {
  ServiceConf s;
  FieldDecoder d(obj);
  d.unsupported("script", "script is not supported");
  d.only({"id", "name", "desc", "labels", "create_time", "update_time", "plugins", "upstream",
          "upstream_id", "hosts", "enable_websocket"});
  decode_common_fields(d, &s);
  d.field("plugins", &s.plugins, as_object);
  d.field("upstream", &s.upstream, decode_upstream_fields);
  d.field("upstream_id", &s.upstream_id, as_id);
  d.field("hosts", &s.hosts, [](const Json& v) { return as_string_array(v, as_host); });
  d.field("enable_websocket", &s.enable_websocket, as_bool);
  common::Status st = finish_decode(d, s.upstream, s.plugins);
  if (!st.is_ok()) {
    return st;
  }
  return s;
}

}  // namespace

StatusOr<ServiceConf> decode_service(const Json& obj) {
  return no_throw([&] { return decode_service_fields(obj); });
}

}  // namespace sluice::config
