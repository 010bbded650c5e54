#pragma once
// real-ip's conf, typed and checked with the texts of APISIX 3.x's schema (source required,
// trusted_addresses as ip_def entries) and check_schema (`invalid ip address: <entry>`).

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "router/expr.h"
#include "router/real_ip.h"

namespace sluice::plugins::real_ip {

// Thread: any (immutable after parse)
struct Conf {
  std::string source;
  bool forwarded_for = false;  // source is http_x_forwarded_for: the header's list is read
  router::Var var;             // any other source
  bool has_trusted = false;    // trusted_addresses was given
  // The trusted blocks (every address when trusted_addresses is absent), the header and
  // `recursive`, in the shape config.yaml's real_ip handling reads.
  router::RealIpConfig lookup;
};

// Errors are the text after APISIX's `... plugin real-ip err: `, e.g. `property "source" is
// required`, `property "trusted_addresses" validation failed: failed to validate item 1:
// object matches none of the required`, `invalid ip address: ::1/129`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::real_ip
