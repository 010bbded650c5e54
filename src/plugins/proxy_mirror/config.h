#pragma once
// proxy-mirror's conf, checked as APISIX's schema checks it (same texts), plus what Sluice
// refuses on top: grpc and grpcs mirrors.

#include <cstdint>
#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::proxy_mirror {

struct Conf {
  bool https = false;
  std::string host;  // the name or address, brackets removed from an IPv6 literal
  uint16_t port = 0;
  std::string path;     // empty: none
  bool prefix = false;  // path_concat_mode "prefix" (else "replace")
  double sample_ratio = 1;
};

common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The target the mirror gets, as APISIX's enable_mirror composes it: the request's uri and
// args, `path` in front of them ("prefix") or instead of the uri ("replace").
void mirror_target(const Conf& c, std::string_view uri, std::string_view args, std::string* out);

}  // namespace sluice::plugins::proxy_mirror
