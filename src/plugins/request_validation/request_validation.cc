#include "plugins/request_validation/request_validation.h"

#include <memory>

#include "plugin/args.h"

namespace sluice::plugins::request_validation {

using plugin::Action;
using plugin::Context;
using plugin::Json;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<RequestValidation>(std::move(conf).value()));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c + 32);
    }
  }
  return out;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"request-validation", 2800, false, check, make, kSchema};
  return kInfo;
}

Json header_object(const http::RequestHead& req, const std::vector<std::string>& names) {
  Json out = Json::object();
  for (size_t i = 0; i < req.num_headers; ++i) {
    plugin::add_value(out, lower(req.headers[i].name), Json(std::string(req.headers[i].value)));
  }
  // ngx.req.get_headers()'s table finds `User-Agent` and `user_agent` as `user-agent`.
  for (const std::string& n : names) {
    if (out.contains(n)) {
      continue;
    }
    std::string l = lower(n);
    auto it = out.find(l);
    if (it == out.end()) {
      for (char& c : l) {
        c = c == '_' ? '-' : c;
      }
      it = out.find(l);
    }
    if (it != out.end()) {
      Json copy = *it;
      out.emplace(n, std::move(copy));
    }
  }
  return out;
}

Action RequestValidation::reject(Context& ctx, std::string_view why) const {
  ctx.reply_status = conf_.rejected_code;
  if (conf_.has_rejected_msg) {
    ctx.reply_body = conf_.rejected_msg;
  } else {
    ctx.reply_body.assign(why);
  }
  return Action::kReply;
}

Action RequestValidation::rewrite(Context& ctx) const {
  if (ctx.req == nullptr) {
    return Action::kContinue;
  }
  if (conf_.header_schema != nullptr) {
    std::string err = conf_.header_schema->validate(header_object(*ctx.req, conf_.header_names));
    if (!err.empty()) {
      return reject(ctx, err);
    }
  }
  if (conf_.body_schema == nullptr) {
    return Action::kContinue;
  }
  if (ctx.request_body.empty()) {
    return reject(ctx, {});  // APISIX: no body, the code with rejected_msg or nothing
  }
  Json body;
  // APISIX compares the whole Content-Type with the form type: a charset makes it JSON.
  const http::Header* type = ctx.req->find("content-type");
  if (type != nullptr && type->value == "application/x-www-form-urlencoded") {
    body = plugin::decode_args(ctx.request_body);
  } else {
    try {
      body = Json::parse(ctx.request_body);
    } catch (const Json::parse_error& e) {
      std::string_view what = e.what();
      size_t sp = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
      return reject(ctx, sp == std::string_view::npos ? what : what.substr(sp + 2));
    }
  }
  std::string err = conf_.body_schema->validate(body);
  if (!err.empty()) {
    return reject(ctx, err);
  }
  return Action::kContinue;
}

}  // namespace sluice::plugins::request_validation
