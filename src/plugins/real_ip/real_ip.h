#pragma once
// real-ip: gives the request the client address a variable or X-Forwarded-For names, when
// the peer is trusted, as APISIX 3.x's (priority 23000, rewrite). Every later plugin, the
// variables, the balancer's hash and the X-Real-IP / X-Forwarded-For sent upstream see it;
// routing (remote_addrs) has already seen the peer, as in APISIX. See README.md beside this file.

#include <string>
#include <string_view>

#include "plugin/info.h"
#include "plugins/real_ip/config.h"

namespace sluice::plugins::real_ip {

const plugin::PluginInfo& info();

// APISIX's parse_addr then parse_ipv4/parse_ipv6: "1.2.3.4", "1.2.3.4:80", "::1", "[::1]",
// "[::1]:80". Stores the address and its text (no brackets, no port); false when either part
// is bad (a port outside 1-65535 included).
bool parse_addr(std::string_view text, router::IpAddr* addr, std::string_view* ip_text);

// Thread: any (immutable)
class RealIp final : public plugin::Plugin {
 public:
  explicit RealIp(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  Conf conf_;
};

}  // namespace sluice::plugins::real_ip
