// decode_proto: APISIX 3.x's proto schema (a protobuf definition for gRPC transcoding).

#include "config/field_decoder.h"
#include "config/resources.h"

namespace sluice::config {

using common::StatusOr;

namespace {

StatusOr<ProtoConf> decode_proto_fields(const Json& obj) {
  ProtoConf p;
  FieldDecoder d(obj);
  d.only({"id", "name", "desc", "labels", "content", "create_time", "update_time"});
  d.require({"content"});
  decode_common_fields(d, &p);
  d.field("content", &p.content, [](const Json& v) { return as_string(v, 1, 1024 * 1024); });
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  return p;
}

}  // namespace

StatusOr<ProtoConf> decode_proto(const Json& obj) {
  return no_throw([&] { return decode_proto_fields(obj); });
}

}  // namespace sluice::config
