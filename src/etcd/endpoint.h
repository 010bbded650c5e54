#pragma once
// An etcd member's client URL, `http://host:port` or `https://host:port`, split for connecting:
// the same syntax and checks as config.yaml's deployment.etcd.host (config/etcd_values.h).

#include <string_view>

#include "common/status.h"
#include "config/etcd_values.h"

namespace sluice::etcd {

using Endpoint = config::EtcdEndpoint;

// Parses a client URL; the port defaults to 2379, a trailing '/' is tolerated. The error
// names the URL.
common::StatusOr<Endpoint> parse_endpoint(std::string_view url);

}  // namespace sluice::etcd
