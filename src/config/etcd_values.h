#pragma once
// Value syntaxes of config.yaml's deployment.etcd: the cluster's URLs, the key prefix, the
// timeout, the host name a TLS connection to etcd names, and keys that go in pairs.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

inline constexpr int kEtcdDefaultPort = 2379;

// An etcd member's client URL, split for connecting.
// Thread: any (value type)
struct EtcdEndpoint {
  bool tls = false;
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  uint16_t port = kEtcdDefaultPort;
  std::string url;                // as given, for messages
  std::string authority() const;  // for the Host header: host:port, IPv6 in brackets
};

// One etcd endpoint: http:// or https://, a host name, IPv4 address or bracketed IPv6 address,
// an optional port 1-65535 (default 2379), and at most a trailing '/'. The error says why
// not, as a fragment ("a path is not allowed").
common::StatusOr<EtcdEndpoint> parse_etcd_endpoint(std::string_view url);

// parse_etcd_endpoint on a config value, returned as "<scheme>://<host>:<port>". Errors are
// fragments for the key's path.
common::StatusOr<std::string> parse_etcd_url(const Json& v);

// A key prefix such as "/apisix": a '/' first, at most 256 characters, no spaces or control
// characters. Returned without trailing '/'s; "/" alone is refused (it would claim all keys).
common::StatusOr<std::string> parse_etcd_prefix(const Json& v);

// etcd's request timeout: a number of seconds > 0 and <= 3600.
common::StatusOr<double> parse_etcd_timeout(const Json& v);

// Two keys of `section` that go together (user and password, cert and key): an error fragment
// naming the one given without the other. A null value counts as absent.
common::Status both_or_neither(const Json& section, const char* a, const char* b);

// A DNS name or IPv4 address (no wildcard, no port): letters, digits, '-', '.', '_'.
common::StatusOr<std::string> parse_host_name(const Json& v);

}  // namespace sluice::config
