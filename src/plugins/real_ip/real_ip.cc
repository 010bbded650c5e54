#include "plugins/real_ip/real_ip.h"

#include <charconv>
#include <memory>
#include <utility>

namespace sluice::plugins::real_ip {

using plugin::Action;
using plugin::Context;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const RealIp>(std::move(conf).value()));
}

bool valid_port(std::string_view p) {
  unsigned port = 0;
  auto r = std::from_chars(p.data(), p.data() + p.size(), port);
  return r.ec == std::errc() && r.ptr == p.data() + p.size() && port >= 1 && port <= 65535;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"real-ip", 23000, false, check, make, kSchema};
  return kInfo;
}

bool parse_addr(std::string_view text, router::IpAddr* addr, std::string_view* ip_text) {
  std::string_view ip = text;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t end = text.find(']');
    if (end == std::string_view::npos) {
      return false;
    }
    ip = text.substr(1, end - 1);
    std::string_view rest = text.substr(end + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return false;
      }
      port = rest.substr(1);
      if (port.empty()) {
        return false;
      }
    }
  } else if (size_t colon = text.find(':'); colon != std::string_view::npos &&
                                            text.find(':', colon + 1) == std::string_view::npos) {
    ip = text.substr(0, colon);  // one colon: host:port; more: an IPv6 address
    port = text.substr(colon + 1);
    if (port.empty()) {
      return false;
    }
  }
  if (!port.empty() && !valid_port(port)) {
    return false;
  }
  if (!router::parse_ip(ip, addr)) {
    return false;
  }
  *ip_text = ip;
  return true;
}

Action RealIp::rewrite(Context& ctx) const {
  const router::IpAddr peer = ctx.match.remote_ip;
  if (conf_.has_trusted && !conf_.lookup.trusts(peer)) {
    return Action::kContinue;
  }
  router::IpAddr addr;
  if (conf_.forwarded_for) {
    // The server's X-Forwarded-For reading (config.yaml's real_ip): the last address, or with
    // `recursive` the rightmost untrusted one. A missing or malformed list changes nothing.
    if (!router::find_real_ip(conf_.lookup, peer, *ctx.req, &addr, &ctx.real_ip)) {
      return Action::kContinue;
    }
  } else {
    router::VarScratch scratch;
    std::string_view value, ip;
    if (!conf_.var.get(ctx.match, &scratch, &value) || !parse_addr(value, &addr, &ip)) {
      return Action::kContinue;  // APISIX: "missing real address" / "bad address"
    }
    ctx.real_ip.assign(ip);
  }
  ctx.match.remote_addr = ctx.real_ip;
  ctx.match.remote_ip = addr;
  return Action::kContinue;
}

}  // namespace sluice::plugins::real_ip
