#include "plugins/consumer_restriction/consumer_restriction.h"

#include <fmt/format.h>

#include <memory>

#include "schema/checks.h"

namespace sluice::plugins::consumer_restriction {

using common::Status;
using common::StatusOr;
using plugin::Action;
using plugin::Context;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<std::vector<std::string>> name_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  return schema::as_string_array(v, [](const Json& s) { return schema::as_string(s); });
}

StatusOr<std::string> method_value(const Json& v) {
  return schema::as_enum(
      v, {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "CONNECT", "TRACE", "PURGE"});
}

using MethodRules = std::vector<std::pair<std::string, std::vector<std::string>>>;

StatusOr<MethodRules> method_rules(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  MethodRules out;
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& item = v[i];
    auto fail = [&](const Status& s) {
      return Status::error(fmt::format("failed to validate item {}: {}", i + 1, s.message()));
    };
    if (!item.is_object()) {
      return fail(schema::wrong_type("object", item));
    }
    std::string user;
    std::vector<std::string> methods;
    FieldDecoder d(item);
    d.field("user", &user, [](const Json& s) { return schema::as_string(s); });
    d.field("methods", &methods, [](const Json& m) -> StatusOr<std::vector<std::string>> {
      if (!m.is_array()) {
        return schema::wrong_type("array", m);
      }
      if (m.empty()) {
        return Status::error("expect array to have at least 1 items");
      }
      return schema::as_string_array(m, method_value);
    });
    if (!d.ok()) {
      return fail(d.status());
    }
    // An item without `user` names no value (a nil user in APISIX matches nothing).
    out.emplace_back(item.contains("user") ? user : std::string(1, '\0'), std::move(methods));
  }
  return out;
}

StatusOr<std::shared_ptr<const plugin::Plugin>> make(const Json& json, const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const ConsumerRestriction>(std::move(conf).value()));
}

}  // namespace

StatusOr<Conf> parse(const Json& json) {
  if (!json.is_object()) {
    return schema::wrong_type("object", json);
  }
  Conf c;
  std::vector<std::string> white, black;
  FieldDecoder d(json);
  d.field("type", &c.type_name, [](const Json& v) {
    return schema::as_enum(v, {"consumer_name", "service_id", "route_id", "consumer_group_id"});
  });
  d.field("blacklist", &black, name_list);
  d.field("whitelist", &white, name_list);
  d.field("allowed_by_methods", &c.allowed_by_methods, method_rules);
  int64_t code = 403;
  d.field("rejected_code", &code,
          [](const Json& v) { return schema::as_integer(v, 200, INT32_MAX); });
  d.field("rejected_msg", &c.rejected_msg, [](const Json& v) { return schema::as_string(v); });
  if (d.ok() && !d.has("blacklist") && !d.has("whitelist") && !d.has("allowed_by_methods")) {
    d.fail("object matches none of the alternatives");
  }
  if (!d.ok()) {
    return d.status();
  }
  c.type = c.type_name == "service_id"          ? Type::kServiceId
           : c.type_name == "route_id"          ? Type::kRouteId
           : c.type_name == "consumer_group_id" ? Type::kConsumerGroupId
                                                : Type::kConsumerName;
  c.has_whitelist = d.has("whitelist");
  c.has_blacklist = d.has("blacklist");
  c.whitelist.insert(white.begin(), white.end());
  c.blacklist.insert(black.begin(), black.end());
  c.rejected_code = static_cast<int>(code);
  c.has_rejected_msg = d.has("rejected_msg");
  return c;
}

Status check(const Json& conf, plugin::PluginUse) { return parse(conf).status(); }

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"consumer-restriction", 2400, false, check, make, kSchema};
  return kInfo;
}

ConsumerRestriction::ConsumerRestriction(Conf conf) : conf_(std::move(conf)) {
  std::string msg =
      conf_.has_rejected_msg ? conf_.rejected_msg : "The " + conf_.type_name + " is forbidden.";
  rejected_body_ = Json{{"message", msg}}.dump() + "\n";
  missing_body_ = Json{{"message", "The request is rejected, please check the " + conf_.type_name +
                                       " for this request"}}
                      .dump() +
                  "\n";
}

bool ConsumerRestriction::method_allowed(std::string_view method, std::string_view value) const {
  for (const auto& [user, methods] : conf_.allowed_by_methods) {
    if (user == value) {
      for (const std::string& m : methods) {
        if (m == method) {
          return true;
        }
      }
      return false;
    }
  }
  return true;  // a value no item names may use any method
}

Action ConsumerRestriction::access(Context& ctx) const {
  std::string_view value;
  switch (conf_.type) {
    case Type::kConsumerName:
      value = ctx.consumer;
      break;
    case Type::kServiceId:
      value = ctx.service_id;
      break;
    case Type::kRouteId:
      value = ctx.route_id;
      break;
    case Type::kConsumerGroupId:
      value = ctx.consumer_group_id;
      break;
  }
  // APISIX reads nil for each of these when there is none; an id is never empty.
  if (value.empty()) {
    ctx.reply_status = 401;
    ctx.reply_body = missing_body_;
    return Action::kReply;
  }
  bool block = false;
  bool whitelisted = false;
  if (conf_.has_blacklist && conf_.blacklist.count(std::string(value)) != 0) {
    block = true;
  } else {
    if (conf_.has_whitelist) {
      whitelisted = conf_.whitelist.count(std::string(value)) != 0;
      block = !whitelisted;
    }
    if (!conf_.allowed_by_methods.empty() && !whitelisted) {
      std::string_view method =
          ctx.req->method_text.empty() ? http::method_name(ctx.req->method) : ctx.req->method_text;
      block = block || !method_allowed(method, value);
    }
  }
  if (!block) {
    return Action::kContinue;
  }
  ctx.reply_status = conf_.rejected_code;
  ctx.reply_body = rejected_body_;
  return Action::kReply;
}

const char kSchema[] =
    R"({"type":"object","properties":{"type":{"type":"string","enum":["consumer_name","service_id","route_id","consumer_group_id"],"default":"consumer_name"},"blacklist":{"type":"array","minItems":1,"items":{"type":"string"}},"whitelist":{"type":"array","minItems":1,"items":{"type":"string"}},"allowed_by_methods":{"type":"array","items":{"type":"object","properties":{"user":{"type":"string"},"methods":{"type":"array","minItems":1,"items":{"type":"string","enum":["GET","POST","PUT","DELETE","PATCH","HEAD","OPTIONS","CONNECT","TRACE","PURGE"]}}}}},"rejected_code":{"type":"integer","minimum":200,"default":403},"rejected_msg":{"type":"string"}},"anyOf":[{"required":["blacklist"]},{"required":["whitelist"]},{"required":["allowed_by_methods"]}]})";

}  // namespace sluice::plugins::consumer_restriction
