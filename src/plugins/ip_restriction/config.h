#pragma once
// ip-restriction's conf, typed and checked with the texts of APISIX 3.x's schema (ip_def for
// each entry) and its check_schema (`invalid ip address: <entry>`); the list is turned into
// an IpSet here, once.

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/ip_restriction/ip_set.h"

namespace sluice::plugins::ip_restriction {

// Exactly one of `whitelist` and `blacklist` was given (APISIX's oneOf); `set` holds it.
// Thread: any (immutable after parse)
struct Conf {
  bool whitelist = false;  // true: only addresses in `set` pass; false: those in it are refused
  IpSet set;
  std::string message = "Your IP address is not allowed";
  int response_code = 403;
};

// Errors are the text after APISIX's `... plugin ip-restriction err: `, e.g.
// `property "whitelist" validation failed: failed to validate item 1: object matches none of
// the required`, `invalid ip address: ::1/129`,
// `value should match only one schema, but matches both schemas 1 and 2`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// Whether `text` passes one of the four branches of APISIX's ip_def (IPv4, IPv4/CIDR, IPv6,
// IPv6/CIDR); what passes may still be refused by check_schema's address check.
bool matches_ip_def(std::string_view text);

// The JSON schema served by GET /apisix/admin/plugins/ip-restriction.
extern const char kSchema[];

}  // namespace sluice::plugins::ip_restriction
