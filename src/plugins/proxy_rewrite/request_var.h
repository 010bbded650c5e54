#pragma once
// RequestVar: one `$name` a proxy-rewrite template reads, resolved against the request the way
// APISIX's ctx.var answers at the rewrite phase.

#include <string_view>

#include "common/status.h"
#include "plugin/plugin.h"
#include "router/expr.h"

namespace sluice::plugins::proxy_rewrite {

// What a template reads besides the request: the normalised path (`$uri`) computed once per
// request. Thread: worker (stack-local).
struct VarSource {
  const plugin::Context* ctx = nullptr;
  std::string_view uri;  // nginx's $uri: decoded, normalised
  router::VarScratch scratch;
};

// Thread: any (immutable)
class RequestVar {
 public:
  // The variables `vars` reads (router/expr.h: arg_*, http_*, cookie_*, uri, request_uri,
  // args, query_string, host, remote_addr, request_method, server_port, scheme, https and the
  // connection's ssl_* ones), APISIX's own
  // (route_id, route_name, service_id, service_name, consumer_name) and a few nginx aliases
  // (is_args, document_uri, real_request_uri, content_type, content_length,
  // server_protocol). A name nginx or APISIX would answer but Sluice cannot (remote_port,
  // server_addr, ssl_client_cert, ...) is an error naming it; any other name is nil, as in APISIX.
  static common::StatusOr<RequestVar> parse(std::string_view name);

  // The value; false when nil (an empty value reads as nil too).
  bool get(VarSource& src, std::string_view* out) const;

 private:
  enum class Kind : uint8_t {
    kNil,
    kRequest,  // read by router::Var
    kUri,
    kIsArgs,
    kRouteId,
    kRouteName,
    kServiceId,
    kServiceName,
    kConsumerName,
    kConsumerGroupId,
    kServerProtocol,
  };
  Kind kind_ = Kind::kNil;
  router::Var var_;
};

}  // namespace sluice::plugins::proxy_rewrite
