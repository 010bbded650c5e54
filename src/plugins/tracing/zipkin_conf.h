#pragma once
// zipkin's conf with APISIX's schema texts (apisix/plugins/zipkin.lua).

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/tracing/http_post.h"

namespace sluice::plugins::tracing {

// Thread: any (immutable)
struct ZipkinConf {
  Endpoint endpoint;
  double sample_ratio = 1;
  std::string service_name = "APISIX";
  std::string server_addr;  // localEndpoint.ipv4; empty: none (see docs/tracing.md)
};

common::StatusOr<ZipkinConf> parse_zipkin(const plugin::Json& conf);
extern const char* const kZipkinSchema;

}  // namespace sluice::plugins::tracing
