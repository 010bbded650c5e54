#pragma once
// referer-restriction's conf, typed and checked with the texts of APISIX 3.x's schema (its
// host_def for each entry); the list is turned into a HostMatcher here, once.

#include <string>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/referer_restriction/host_matcher.h"

namespace sluice::plugins::referer_restriction {

// Exactly one of `whitelist` and `blacklist` was given (APISIX's oneOf); `hosts` holds it.
// Thread: any (immutable after parse)
struct Conf {
  bool whitelist = false;  // true: only a Referer host in `hosts` passes
  HostMatcher hosts;
  bool bypass_missing = false;
  std::string message = "Your referer host is not allowed";
};

// Errors are the text after APISIX's `... plugin referer-restriction err: `, e.g.
// `property "whitelist" validation failed: failed to validate item 1: failed to match pattern
// "^\*?[0-9a-zA-Z-._]+$" with "a b"`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/referer-restriction.
extern const char kSchema[];

}  // namespace sluice::plugins::referer_restriction
