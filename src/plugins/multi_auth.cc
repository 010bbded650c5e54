#include "plugins/multi_auth.h"

#include <fmt/format.h>

#include "common/log.h"
#include "plugins/builtin.h"
#include "schema/checks.h"

namespace sluice::plugins::multi_auth {

using common::Status;
using common::StatusOr;
using plugin::Action;
using plugin::Context;
using plugin::Json;

namespace {

const plugin::PluginInfo* find_auth(std::string_view name) {
  for (const plugin::PluginInfo& p : builtin()) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

// APISIX's schema (auth_plugins: an array of at least 2 items, required), then each item's
// plugins: known, of type auth, and their route-side conf valid.
Status check(const Json& conf, plugin::PluginUse) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  auto it = conf.find("auth_plugins");
  if (it == conf.end()) {
    return Status::error("property \"auth_plugins\" is required");
  }
  if (!it->is_array()) {
    return schema::property_error("auth_plugins", schema::wrong_type("array", *it));
  }
  if (it->size() < 2) {
    return schema::property_error("auth_plugins",
                                  Status::error("expect array to have at least 2 items"));
  }
  for (const Json& item : *it) {
    if (!item.is_object()) {
      return Status::error("auth_plugins items must be objects naming one auth plugin");
    }
    for (const auto& [name, sub] : item.items()) {
      const plugin::PluginInfo* info = find_auth(name);
      if (info == nullptr) {
        return Status::error(name + " plugin did not found");
      }
      if (!info->auth || info->name == "multi-auth") {
        return Status::error(name + " plugin is not supported");
      }
      if (info->check != nullptr) {
        if (Status st = info->check(sub, plugin::PluginUse::kHttp); !st.is_ok()) {
          return Status::error(
              fmt::format("plugin {} check schema failed: {}", name, st.message()));
        }
      }
    }
  }
  return Status::ok();
}

StatusOr<std::shared_ptr<const plugin::Plugin>> make(const Json& conf,
                                                     const plugin::BuildEnv& env) {
  if (Status st = check(conf, plugin::PluginUse::kHttp); !st.is_ok()) {
    return st;
  }
  std::vector<MultiAuth::Auth> auths;
  for (const Json& item : conf.at("auth_plugins")) {
    for (const auto& [name, sub] : item.items()) {
      const plugin::PluginInfo* info = find_auth(name);
      auto made = info->make(sub, env);
      if (!made.is_ok()) {
        return Status::error(fmt::format("plugin {}: {}", name, made.status().message()));
      }
      auths.emplace_back(std::string(info->name), std::move(made).value());
    }
  }
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const MultiAuth>(std::move(auths)));
}

constexpr char kSchema[] =
    R"({"type":"object","title":"work with route or service object","properties":{"auth_plugins":{"type":"array","minItems":2}},"required":["auth_plugins"]})";

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i{"multi-auth", 2600, false, check, make, kSchema};
    i.auth = true;  // no consumer-side conf: it has no index
    return i;
  }();
  return kInfo;
}

Action MultiAuth::rewrite(Context& ctx) const {
  for (size_t i = 0; i < auths_.size(); ++i) {
    Action a = auths_[i].second->rewrite(ctx);
    if (a == Action::kContinue) {
      return Action::kContinue;
    }
    // A failure: logged once every plugin has failed, as APISIX's multi-auth does.
    std::string message = ctx.reply_body;
    Json body = Json::parse(ctx.reply_body, nullptr, false);
    if (body.is_object() && body.contains("message") && body["message"].is_string()) {
      message = body["message"].get<std::string>();
    }
    SLUICE_LOG(kWarn, "{} failed to authenticate the request, code: {}. error: {}", auths_[i].first,
               ctx.reply_status, message);
    ctx.reply_status = 0;
    ctx.reply_body.clear();
  }
  plugin::auth_reply(ctx, 401, "Authorization Failed");
  return Action::kReply;
}

}  // namespace sluice::plugins::multi_auth
