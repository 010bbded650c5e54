#pragma once
// IP addresses and CIDR blocks for `remote_addrs` and the `ipmatch` operator.

#include <array>
#include <cstdint>
#include <string_view>

#include "common/status.h"

struct sockaddr;

namespace sluice::router {

// Thread: any (value type). An IPv4 address lives in bytes[0..3] with v4 = true.
struct IpAddr {
  std::array<uint8_t, 16> bytes{};
  bool v4 = true;

  friend bool operator==(const IpAddr&, const IpAddr&) = default;
};

// Parses "1.2.3.4", "::1", "fe80::1", "::ffff:1.2.3.4" (kept as IPv6). No brackets, no port.
// Never allocates.
bool parse_ip(std::string_view text, IpAddr* out);

// AF_INET / AF_INET6; a v4-mapped IPv6 address (::ffff:a.b.c.d) comes back as IPv4. Any other
// family yields the IPv4 address 0.0.0.0.
IpAddr ip_from_sockaddr(const sockaddr* sa);

// Thread: any (value type). An address block; base has its host bits cleared.
struct Cidr {
  IpAddr base;
  int prefix_len = 0;

  // False when the families differ (an IPv4 block never contains an IPv6 address).
  bool contains(const IpAddr& ip) const;
};

// "10.0.0.0/8", "1.2.3.4" (= /32), "::1" (= /128), "fe80::/10". Host bits in the base are
// ignored, as lua-resty-ipmatcher does.
common::StatusOr<Cidr> parse_cidr(std::string_view text);

}  // namespace sluice::router
