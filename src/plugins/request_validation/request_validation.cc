#include "plugins/request_validation/request_validation.h"

#include <memory>

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

int hex(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// ngx.unescape_uri as decode_args uses it: %XX decoded, '+' is a space.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Adds `v` under `k`, making an array of a repeated key's values.
void put(Json& obj, const std::string& k, Json v) {
  auto it = obj.find(k);
  if (it == obj.end()) {
    obj.emplace(k, std::move(v));
  } else if (it->is_array()) {
    it->push_back(std::move(v));
  } else {
    Json arr = Json::array({std::move(*it), std::move(v)});
    *it = std::move(arr);
  }
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"request-validation", 2800, false, check, make, kSchema};
  return kInfo;
}

Json header_object(const http::RequestHead& req, const std::vector<std::string>& names) {
  Json out = Json::object();
  for (size_t i = 0; i < req.num_headers; ++i) {
    put(out, lower(req.headers[i].name), Json(std::string(req.headers[i].value)));
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

Json decode_form(std::string_view body) {
  Json out = Json::object();
  while (!body.empty()) {
    size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      put(out, unescape(pair), Json(true));
    } else if (eq > 0) {
      put(out, unescape(pair.substr(0, eq)), Json(unescape(pair.substr(eq + 1))));
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
    body = decode_form(ctx.request_body);
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
