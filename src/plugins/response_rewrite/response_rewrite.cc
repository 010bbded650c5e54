#include "plugins/response_rewrite/response_rewrite.h"

#include <memory>
#include <utility>

#include "common/log.h"
#include "plugins/response_rewrite/held_bodies.h"

namespace sluice::plugins::response_rewrite {

using plugin::BodyPiece;
using plugin::Context;
using plugin::Phase;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const ResponseRewrite>(std::move(conf).value()));
}

// $sent_http_<name>: the upstream's fields no edit drops, then the fields plugins added or
// set, as the client will get them.
bool sent_header(const void* arg, std::string_view name, std::string_view* out) {
  const Context& ctx = *static_cast<const Context*>(arg);
  if (const http::ResponseHead* up = ctx.upstream_resp; up != nullptr) {
    for (size_t i = 0; i < up->num_headers; ++i) {
      const http::Header& h = up->headers[i];
      if (router::header_name_is(h.name, name) && !ctx.resp.headers.drops(h.name)) {
        *out = h.value;
        return true;
      }
    }
  }
  bool found = false;
  ctx.resp.headers.for_each_added([&](std::string_view n, std::string_view v) {
    if (!found && router::header_name_is(n, name)) {
      *out = v;
      found = true;
    }
  });
  return found;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{
      .name = "response-rewrite",
      .priority = 899,
      .stream = false,
      .check = check,
      .make = make,
      .schema = kSchema,
      .worker_init = HeldBodies::worker_init,
  };
  return kInfo;
}

ResponseRewrite::ResponseRewrite(Conf conf) : conf_(std::move(conf)) {
  phases_ = plugin::phase_bit(Phase::kHeaderFilter);
  if (conf_.has_body || !conf_.filters.empty()) {
    phases_ |= plugin::phase_bit(Phase::kBodyFilter);
  }
  // filters: log() lets go of a held body.
  if (!conf_.filters.empty()) {
    phases_ |= plugin::phase_bit(Phase::kLog);
  }
}

void ResponseRewrite::header_filter(Context& ctx) const {
  router::ResponseView view;
  view.status = ctx.resp.status != 0 ? ctx.resp.status : ctx.status;
  view.upstream = ctx.upstream_resp;
  view.sent_header = sent_header;
  view.arg = &ctx;
  router::MatchContext m = ctx.match;
  m.resp = &view;
  if (!conf_.vars.eval(m)) {
    return;
  }
  ctx.mark();  // body_filter rewrites only what header_filter did
  if (conf_.status_code != 0) {
    ctx.resp.status = conf_.status_code;
    view.status = conf_.status_code;
  }
  if (conf_.has_body || !conf_.filters.empty()) {
    // APISIX's clear_header_as_body_modified: the upstream's length, encoding and cache
    // validators describe a body the client will not get.
    ctx.resp.headers.remove("Content-Encoding");
    ctx.resp.headers.remove("Last-Modified");
    ctx.resp.headers.remove("ETag");
    ctx.resp.body_changes = true;
    // A 1xx, 204 or 304 has no body to give a length of (RFC 9110 8.6).
    int status = view.status;
    bool bodiless = status < 200 || status == 204 || status == 304;
    ctx.resp.content_length =
        conf_.has_body && !bodiless ? static_cast<int64_t>(conf_.body.size()) : -1;
  }
  if (!conf_.filters.empty()) {
    if (HeldBodies* held = HeldBodies::of(ctx.worker); held != nullptr) {
      held->release(ctx);  // whatever an earlier response on this context left
    }
  }
  if (conf_.has_headers) {
    edit_headers(ctx, m);
  }
}

void ResponseRewrite::edit_headers(Context& ctx, const router::MatchContext& m) const {
  std::string& value = ctx.scratch;
  for (const HeaderField& f : conf_.headers.add) {
    f.value.render(ctx, m, &value);
    if (!value.empty()) {
      ctx.resp.headers.add(f.name, value);
    }
  }
  for (const HeaderField& f : conf_.headers.set) {
    f.value.render(ctx, m, &value);
    if (value.empty()) {
      ctx.resp.headers.remove(f.name);  // nginx: an empty value clears the field
    } else {
      ctx.resp.headers.set(f.name, value);
    }
  }
  for (const std::string& name : conf_.headers.remove) {
    ctx.resp.headers.remove(name);
  }
}

void ResponseRewrite::body_filter(Context& ctx, BodyPiece& piece) const {
  if (!ctx.marked()) {
    return;
  }
  if (!conf_.filters.empty()) {
    filter_body(ctx, piece);
  } else if (piece.eof()) {
    piece.replace(conf_.body);
  } else {
    piece.drop();
  }
}

void ResponseRewrite::filter_body(Context& ctx, BodyPiece& piece) const {
  HeldBodies* held = HeldBodies::of(ctx.worker);
  if (held == nullptr) {
    return;  // no worker_init ran (never in the gateway): the body passes unchanged
  }
  std::string& body = held->at(ctx);
  body.append(piece.data());
  if (!piece.eof()) {
    piece.drop();
    return;
  }
  std::string out;
  for (const BodyFilter& f : conf_.filters) {
    if (!f.apply(body, &out)) {
      SLUICE_LOG(kError,
                 "response-rewrite: a filter's regex failed on the response body of "
                 "route {}; that filter left it unchanged",
                 ctx.route_id);
    }
    body.swap(out);
  }
  piece.replace(body);
  held->release(ctx);
}

void ResponseRewrite::log(Context& ctx) const {
  if (conf_.filters.empty()) {
    return;
  }
  if (HeldBodies* held = HeldBodies::of(ctx.worker); held != nullptr) {
    held->release(ctx);
  }
}

}  // namespace sluice::plugins::response_rewrite
