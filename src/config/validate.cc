#include "config/validate.h"

#include <fmt/format.h>

#include "config/snapshot_builder.h"

namespace sluice::config {

using common::Status;

namespace {

template <typename T>
Status status_of(const common::StatusOr<T>& r) {
  return r.status();
}

// The id the URL gave, else the object's own string id; empty when neither has one.
std::string effective_id(std::string_view id, const Json& obj) {
  if (!id.empty()) {
    return std::string(id);
  }
  if (obj.is_object() && obj.contains("id") && obj["id"].is_string()) {
    return obj["id"].get<std::string>();
  }
  return "";
}

Status validate_by_id(std::string_view kind, std::string_view id, const Json& obj) {
  std::string full = effective_id(id, obj);
  if (kind == "plugin_metadata") {
    if (full.empty()) {
      return Status::error("missing plugin name");
    }
    return status_of(decode_plugin_metadata(full, obj));
  }
  if (full.empty()) {
    return Status::error("missing secret type");
  }
  return status_of(decode_secret(std::string_view(full).substr(0, full.find('/')), obj));
}

Status validate_plain(std::string_view kind, const Json& obj) {
  if (kind == "routes") {
    return status_of(decode_route(obj));
  }
  if (kind == "services") {
    return status_of(decode_service(obj));
  }
  if (kind == "upstreams") {
    return status_of(decode_upstream(obj));
  }
  if (kind == "consumers") {
    return status_of(decode_consumer(obj));
  }
  if (kind == "ssls") {
    return status_of(decode_ssl(obj));
  }
  if (kind == "global_rules") {
    return status_of(decode_global_rule(obj));
  }
  if (kind == "plugin_configs") {
    return status_of(decode_plugin_config(obj));
  }
  if (kind == "stream_routes") {
    return status_of(decode_stream_route(obj));
  }
  if (kind == "protos") {
    return status_of(decode_proto(obj));
  }
  if (kind == "consumer_groups") {
    return status_of(decode_consumer_group(obj));
  }
  return Status::error(fmt::format("Unsupported resource type: {}", kind));
}

}  // namespace

Status validate_resource(std::string_view kind, std::string_view id, const Json& obj) {
  if (kind == "plugin_metadata" || kind == "secrets") {
    return validate_by_id(kind, id, obj);
  }
  return validate_plain(kind, obj);
}

Status validate_resource(std::string_view kind, const Json& obj) {
  return validate_resource(kind, "", obj);
}

bool is_resource_kind(std::string_view kind) {
  for (std::string_view k : kResourceKinds) {
    if (k == kind) {
      return true;
    }
  }
  return false;
}

Status check_resource(std::string_view kind, std::string_view id, const Json& obj) {
  Status st = validate_resource(kind, id, obj);
  if (!st || kind != "routes") {
    return st;
  }
  auto route = decode_route(obj);
  return route ? check_route_compiles(*route) : route.status();
}

}  // namespace sluice::config
