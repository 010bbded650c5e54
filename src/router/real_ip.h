#pragma once
// The client address behind a trusted proxy, as nginx's realip module finds it
// (nginx_config.http.real_ip_from / real_ip_header / real_ip_recursive). Only a TCP peer inside
// `trusted` may name another address; anyone else's X-Real-IP or X-Forwarded-For changes
// nothing that routing (remote_addrs) or allow_admin see. The server applies it before routing
// (config.yaml's nginx_config.http.real_ip_*); the real-ip plugin reuses it after routing.

#include <string>
#include <string_view>
#include <vector>

#include "http/message.h"
#include "router/ip.h"

namespace sluice::router {

// Thread: any (immutable)
struct RealIpConfig {
  std::vector<Cidr> trusted;         // empty: no proxy is trusted (the default)
  std::string header = "x-real-ip";  // lower-case; "x-forwarded-for" reads a list
  bool recursive = false;

  bool trusts(const IpAddr& ip) const;
};

// When `peer` is trusted and the header names a valid address, stores it in `*addr` and its
// text in `*text` and returns true. X-Forwarded-For: the last address, or with `recursive`
// the rightmost one not trusted (the leftmost when all are). Anything malformed: false.
bool find_real_ip(const RealIpConfig& conf, const IpAddr& peer, const http::RequestHead& req,
                  IpAddr* addr, std::string* text);

}  // namespace sluice::router
