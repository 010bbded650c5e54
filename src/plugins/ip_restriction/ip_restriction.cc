#include "plugins/ip_restriction/ip_restriction.h"

#include <memory>
#include <utility>

namespace sluice::plugins::ip_restriction {

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
      std::make_shared<const IpRestriction>(std::move(conf).value()));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"ip-restriction", 3000, false, check, make, kSchema};
  return kInfo;
}

IpRestriction::IpRestriction(Conf conf)
    : conf_(std::move(conf)),
      // APISIX answers `return code, {message = conf.message}`: JSON and a newline.
      body_(plugin::Json{{"message", conf_.message}}.dump() + "\n") {}

Action IpRestriction::access(Context& ctx) const {
  const bool listed = conf_.set.contains(ctx.match.remote_ip);
  if (listed == conf_.whitelist) {
    return Action::kContinue;
  }
  ctx.reply_status = conf_.response_code;
  ctx.reply_body = body_;
  return Action::kReply;
}

}  // namespace sluice::plugins::ip_restriction
