#include "plugins/referer_restriction/referer_restriction.h"

#include <memory>
#include <utility>

#include "plugins/referer_restriction/referer_host.h"

namespace sluice::plugins::referer_restriction {

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
      std::make_shared<const RefererRestriction>(std::move(conf).value()));
}

// nginx's $http_referer as it stands after the rewrite phase: the value proxy-rewrite set, or
// the client's first Referer field. False when there is none.
bool referer_of(const Context& ctx, std::string_view* out) {
  const std::string* edited = nullptr;
  if (ctx.upstream.headers.lookup("Referer", &edited)) {
    if (edited == nullptr) {
      return false;
    }
    *out = *edited;
    return true;
  }
  if (ctx.req == nullptr) {
    return false;
  }
  const http::Header* h = ctx.req->find("Referer");
  if (h == nullptr) {
    return false;
  }
  *out = h->value;
  return true;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"referer-restriction", 2990, false, check, make, kSchema};
  return kInfo;
}

RefererRestriction::RefererRestriction(Conf conf)
    : conf_(std::move(conf)), body_(plugin::Json{{"message", conf_.message}}.dump() + "\n") {}

Action RefererRestriction::access(Context& ctx) const {
  std::string_view referer;
  std::string_view host;
  bool block;
  if (!referer_of(ctx, &referer) || !referer_host(referer, &host)) {
    // Missing or malformed: APISIX treats both as missing.
    block = !conf_.bypass_missing;
  } else {
    block = conf_.hosts.matches(host) != conf_.whitelist;
  }
  if (!block) {
    return Action::kContinue;
  }
  ctx.reply_status = 403;
  ctx.reply_body = body_;
  return Action::kReply;
}

}  // namespace sluice::plugins::referer_restriction
