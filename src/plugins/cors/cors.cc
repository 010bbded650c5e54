#include "plugins/cors/cors.h"

#include <memory>
#include <utility>

namespace sluice::plugins::cors {

using plugin::Action;
using plugin::Context;

namespace {

// The origins allow_origins_by_metadata names, from the snapshot's plugin_metadata/cors (read
// at build: a change to it builds the chain again, so it applies to the next request as
// APISIX's per-request read does).
std::vector<OriginList> metadata_origins(const Conf& conf, plugin::Shared& shared) {
  std::vector<OriginList> out;
  if (conf.origins_by_metadata.empty()) {
    return out;
  }
  const plugin::Json* meta = shared.metadata_of("cors");
  if (meta == nullptr || !meta->is_object()) {
    return out;
  }
  auto map = meta->find("allow_origins");
  if (map == meta->end() || !map->is_object()) {
    return out;
  }
  for (const std::string& key : conf.origins_by_metadata) {
    auto it = map->find(key);
    if (it == map->end()) {
      continue;  // APISIX fails the request here (a nil pattern); Sluice skips the key
    }
    if (auto list = origin_list(*it); list.is_ok()) {
      out.push_back(std::move(list).value());
    }
  }
  return out;
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  auto by_metadata = metadata_origins(*conf, env.shared);
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const Cors>(std::move(conf).value(), std::move(by_metadata)));
}

// APISIX's process_with_allow_origins then match_origins: `**` stands for the request's
// Origin (`*` without one); a list admits only an Origin it names; the result counts only
// when it is `*` or the Origin itself.
bool from_list(const OriginList& list, std::string_view origin, bool has_origin,
               std::string_view* out) {
  std::string_view allow = list.text;
  if (list.echo()) {
    allow = has_origin ? origin : std::string_view("*");
    if (has_origin && origin.find(',') != std::string_view::npos) {
      return false;  // APISIX splits the echoed value as a list; no item equals the whole
    }
  } else if (!list.items.empty()) {
    bool named = false;
    for (const std::string& item : list.items) {
      named = named || (has_origin && item == origin);
    }
    if (!named) {
      return false;
    }
    allow = origin;
  }
  if (allow == "*" || (has_origin && allow == origin)) {
    *out = allow;
    return true;
  }
  return false;
}

// APISIX joins the rules with '|' and searches the Origin once: any rule matching anywhere.
bool from_regexes(const std::vector<proxy_rewrite::RegexRule>& rules, std::string_view origin,
                  bool has_origin, std::string_view* out) {
  if (!has_origin) {
    return false;
  }
  proxy_rewrite::Captures caps;
  std::string why;
  for (const auto& rule : rules) {
    if (rule.match(origin, &caps, &why) == 1) {
      *out = origin;
      return true;
    }
  }
  return false;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"cors", 4000, false, check, make, kSchema};
  return kInfo;
}

// APISIX 3.x's header_filter: with allow_origins_by_metadata, the metadata's origins are
// tried first, key by key, and a match allows the request's Origin itself (even through `*`);
// the route's own allow_origins (or its regexes) is tried after only when allow_origins is
// not `*`. Without an Origin nothing is allowed then.
bool Cors::allowed_origin(std::string_view origin, bool has_origin, std::string_view* out) const {
  if (!conf_.origins_by_metadata.empty()) {
    if (!has_origin) {
      return false;
    }
    std::string_view v;
    for (const OriginList& list : by_metadata_) {
      if (from_list(list, origin, has_origin, &v)) {
        *out = origin;
        return true;
      }
    }
    if (conf_.allow_origins.any()) {
      return false;
    }
  }
  if (!conf_.origin_regexes.empty()) {
    return from_regexes(conf_.origin_regexes, origin, has_origin, out);
  }
  return from_list(conf_.allow_origins, origin, has_origin, out);
}

bool Cors::timing_origin(std::string_view origin, bool has_origin, std::string_view* out) const {
  if (!conf_.timing_regexes.empty()) {
    return from_regexes(conf_.timing_regexes, origin, has_origin, out);
  }
  return conf_.has_timing && from_list(conf_.timing_allow_origins, origin, has_origin, out);
}

// APISIX's set_cors_headers.
void Cors::set_cors_headers(Context& ctx, std::string_view allow_origin) const {
  plugin::HeaderEdits& h = ctx.resp.headers;
  h.set("Access-Control-Allow-Origin", allow_origin);
  if (allow_origin != "*") {
    h.add("Vary", "Origin");
  }
  h.set("Access-Control-Allow-Methods", conf_.allow_methods);
  h.set("Access-Control-Max-Age", conf_.max_age);
  h.set("Access-Control-Expose-Headers", conf_.expose_headers);
  if (conf_.echo_request_headers) {
    const http::Header* req = ctx.req->find("access-control-request-headers");
    if (req != nullptr) {
      h.set("Access-Control-Allow-Headers", req->value);
    } else {
      h.remove("Access-Control-Allow-Headers");  // set_header(name, nil)
    }
  } else {
    h.set("Access-Control-Allow-Headers", conf_.allow_headers);
  }
  if (conf_.allow_credential) {
    h.set("Access-Control-Allow-Credentials", "true");
  }
}

// APISIX decides in header_filter from the Origin its rewrite saved; the decision needs only
// the request, so it is made here and its headers ride with whichever answer follows: the
// upstream's, this hook's 200 to an OPTIONS request, or another plugin's refusal.
Action Cors::rewrite(Context& ctx) const {
  const http::Header* o = ctx.req->find("origin");
  const bool has_origin = o != nullptr;
  const std::string_view origin = has_origin ? o->value : std::string_view();
  std::string_view value;
  if (allowed_origin(origin, has_origin, &value)) {
    set_cors_headers(ctx, value);
  }
  if (timing_origin(origin, has_origin, &value)) {
    ctx.resp.headers.set("Timing-Allow-Origin", value);
  }
  if (ctx.req->method == http::Method::kOptions) {
    ctx.reply_status = 200;
    ctx.reply_body.clear();
    return Action::kReply;
  }
  return Action::kContinue;
}

}  // namespace sluice::plugins::cors
