#pragma once
// An etcd member's client URL, `http://host:port` or `https://host:port`, split for connecting.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::etcd {

// Thread: any (value type)
struct Endpoint {
  bool tls = false;
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  uint16_t port = 2379;
  std::string url;                // as configured, for messages
  std::string authority() const;  // for the Host header: host:port, IPv6 in brackets
};

// Parses a client URL; the port defaults to 2379, a trailing '/' is tolerated.
common::StatusOr<Endpoint> parse_endpoint(std::string_view url);

}  // namespace sluice::etcd
