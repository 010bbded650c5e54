#include "plugins/proxy_rewrite/request_var.h"

#include <array>
#include <string>

namespace sluice::plugins::proxy_rewrite {

using common::Status;
using common::StatusOr;

namespace {

// Names nginx or APISIX give a value at the rewrite phase that Sluice has no source for. A
// template using one is refused rather than silently sending an empty value. The ssl_* ones
// router::Var reads (ssl_server_name, ssl_protocol, ...) are the exception (parse()).
constexpr std::array<std::string_view, 22> kUnsupported = {
    "remote_port",
    "server_addr",
    "server_name",
    "hostname",
    "request_id",
    "request_time",
    "request_length",
    "request_body",
    "msec",
    "time_local",
    "time_iso8601",
    "remote_user",
    "realip_remote_addr",
    "realip_remote_port",
    "connection",
    "connection_requests",
    "pid",
    "nginx_version",
    "binary_remote_addr",
    "proxy_add_x_forwarded_for",
    "consumer_group_id",
    "http2",
};
constexpr std::array<std::string_view, 4> kUnsupportedPrefixes = {"ssl_", "post_arg_", "uri_param_",
                                                                  "graphql_"};

bool unsupported(std::string_view name) {
  for (std::string_view n : kUnsupported) {
    if (n == name) {
      return true;
    }
  }
  for (std::string_view p : kUnsupportedPrefixes) {
    if (name.starts_with(p)) {
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<RequestVar> RequestVar::parse(std::string_view name) {
  struct Named {
    std::string_view name;
    Kind kind;
  };
  static constexpr std::array<Named, 10> kOwn = {{
      {"uri", Kind::kUri},
      {"document_uri", Kind::kUri},
      {"is_args", Kind::kIsArgs},
      {"route_id", Kind::kRouteId},
      {"route_name", Kind::kRouteName},
      {"service_id", Kind::kServiceId},
      {"service_name", Kind::kServiceName},
      {"consumer_name", Kind::kConsumerName},
      {"consumer_group_id", Kind::kConsumerGroupId},
      {"server_protocol", Kind::kServerProtocol},
  }};
  RequestVar v;
  for (const Named& n : kOwn) {
    if (n.name == name) {
      v.kind_ = n.kind;
      return v;
    }
  }
  if (unsupported(name) && router::Var::parse(name).nil()) {
    return Status::error("variable \"$" + std::string(name) + "\" is not supported by Sluice");
  }
  std::string_view alias = name;
  if (name == "real_request_uri") {
    alias = "request_uri";
  } else if (name == "content_type") {
    alias = "http_content_type";
  } else if (name == "content_length") {
    alias = "http_content_length";
  }
  v.var_ = router::Var::parse(alias);
  v.kind_ = v.var_.nil() ? Kind::kNil : Kind::kRequest;
  return v;
}

bool RequestVar::get(VarSource& src, std::string_view* out) const {
  const plugin::Context& ctx = *src.ctx;
  switch (kind_) {
    case Kind::kNil:
      return false;
    case Kind::kRequest:
      return var_.get(ctx.match, &src.scratch, out);
    case Kind::kUri:
      *out = src.uri;
      break;
    case Kind::kIsArgs:
      *out = ctx.req->query.empty() ? std::string_view() : std::string_view("?");
      break;
    case Kind::kRouteId:
      *out = ctx.route_id;
      break;
    case Kind::kRouteName:
      *out = ctx.route_name;
      break;
    case Kind::kServiceId:
      *out = ctx.service_id;
      break;
    case Kind::kServiceName:
      *out = ctx.service_name;
      break;
    case Kind::kConsumerName:
      *out = ctx.consumer;
      break;
    case Kind::kConsumerGroupId:
      *out = ctx.consumer_group_id;
      break;
    case Kind::kServerProtocol:
      *out = ctx.req->version_major == 2   ? "HTTP/2.0"
             : ctx.req->version_minor == 0 ? "HTTP/1.0"
                                           : "HTTP/1.1";
      break;
  }
  return !out->empty();
}

}  // namespace sluice::plugins::proxy_rewrite
