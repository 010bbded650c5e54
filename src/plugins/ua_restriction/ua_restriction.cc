#include "plugins/ua_restriction/ua_restriction.h"

#include <memory>
#include <utility>

namespace sluice::plugins::ua_restriction {

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
      std::make_shared<const UaRestriction>(std::move(conf).value()));
}

bool lua_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view strip(std::string_view s) {
  while (!s.empty() && lua_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && lua_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"ua-restriction", 2999, false, check, make, kSchema};
  return kInfo;
}

UaRestriction::UaRestriction(Conf conf)
    : conf_(std::move(conf)), body_(plugin::Json{{"message", conf_.message}}.dump() + "\n") {}

bool UaRestriction::matches(std::string_view user_agent) const {
  user_agent = strip(user_agent);
  proxy_rewrite::Captures caps;
  std::string why;
  for (const proxy_rewrite::RegexRule& rule : conf_.rules) {
    if (rule.match(user_agent, &caps, &why) > 0) {
      return true;
    }
  }
  return false;
}

Action UaRestriction::refuse(Context& ctx) const {
  ctx.reply_status = 403;
  ctx.reply_body = body_;
  return Action::kReply;
}

// The User-Agent as the request stands after the rewrite phase (proxy-rewrite may have set
// or removed it, as ngx.req.set_header does in APISIX); with several fields, the allowlist
// needs one of them to match and the denylist refuses when any of them matches.
Action UaRestriction::access(Context& ctx) const {
  const std::string* edited = nullptr;
  bool any = false;
  bool hit = false;
  if (ctx.upstream.headers.lookup("User-Agent", &edited)) {
    any = edited != nullptr;
    hit = any && matches(*edited);
  } else if (ctx.req != nullptr) {
    for (size_t i = 0; i < ctx.req->num_headers && !hit; ++i) {
      const http::Header& h = ctx.req->headers[i];
      if (http::iequals(h.name, "User-Agent")) {
        any = true;
        hit = matches(h.value);
      }
    }
  }
  if (!any) {
    return conf_.bypass_missing ? Action::kContinue : refuse(ctx);
  }
  return hit == conf_.allow ? Action::kContinue : refuse(ctx);
}

}  // namespace sluice::plugins::ua_restriction
