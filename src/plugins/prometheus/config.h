#pragma once
// prometheus's conf, checked with APISIX's schema and error texts.

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::prometheus {

// Thread: any (value type)
struct Conf {
  bool prefer_name = false;  // label routes and services by name rather than id
};

common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/prometheus.
extern const char kSchema[];

}  // namespace sluice::plugins::prometheus
