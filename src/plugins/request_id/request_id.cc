#include "plugins/request_id/request_id.h"

#include <chrono>
#include <memory>
#include <utility>

#include "plugins/request_id/id_gen.h"

namespace sluice::plugins::request_id {

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
      std::make_shared<const RequestId>(std::move(conf).value()));
}

uint64_t unix_seconds() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"request-id", 12015, false, check, make, kSchema};
  return kInfo;
}

uint32_t RequestId::phases() const {
  uint32_t p = plugin::phase_bit(plugin::Phase::kRewrite);
  if (conf_.include_in_response) {
    p |= plugin::phase_bit(plugin::Phase::kHeaderFilter);
  }
  return p;
}

void RequestId::make_id(std::string* out) const {
  Rng& rng = thread_rng();
  switch (conf_.algorithm) {
    case Algorithm::kUuid:
      append_uuid(rng, out);
      break;
    case Algorithm::kNanoid:
      append_nanoid(rng, out);
      break;
    case Algorithm::kRangeId:
      append_range_id(rng, conf_.char_set, conf_.length, out);
      break;
    case Algorithm::kKsuid:
      append_ksuid(rng, unix_seconds(), out);
      break;
  }
}

// APISIX keeps a non-empty id the client sent (it goes upstream as it came) and makes one
// otherwise. The id the client gets is set here, with the request: it then goes out with
// whichever answer follows, the gateway's own included; header_filter gives an upstream's
// own non-empty header precedence, as APISIX's does.
Action RequestId::rewrite(Context& ctx) const {
  const http::Header* h = ctx.req->find(conf_.header_name);
  if (h != nullptr && !h->value.empty()) {
    ctx.request_id.assign(h->value);
    if (conf_.include_in_response) {
      ctx.resp.headers.set(conf_.header_name, h->value);
    }
    return Action::kContinue;
  }
  ctx.scratch.clear();
  make_id(&ctx.scratch);
  ctx.request_id.assign(ctx.scratch);
  ctx.upstream.headers.set(conf_.header_name, ctx.scratch);
  if (conf_.include_in_response) {
    ctx.resp.headers.set(conf_.header_name, ctx.scratch);
  }
  return Action::kContinue;
}

void RequestId::header_filter(Context& ctx) const {
  if (ctx.upstream_resp == nullptr) {
    return;
  }
  const http::Header* h = ctx.upstream_resp->find(conf_.header_name);
  if (h != nullptr && !h->value.empty()) {
    ctx.resp.headers.set(conf_.header_name, h->value);
  }
}

}  // namespace sluice::plugins::request_id
