#include "plugins/public_api/public_api.h"

#include <utility>

#include "io/event_loop.h"

namespace sluice::plugins::public_api {

using plugin::Action;
using plugin::Context;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  auto apis = env.shared.find<ApiRegistry>(kRegistryKey);
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const PublicApi>(std::move(conf).value(), std::move(apis)));
}

// Back on the worker: the answer for the suspended request, unless it has gone.
void answer(plugin::WorkerLocal* worker, uint64_t token, const ApiRegistry::Api* api,
            std::optional<std::string> body) {
  Context* ctx = worker->host->waiting(token);
  if (ctx == nullptr) {
    return;
  }
  if (body) {
    ctx->reply_status = 200;
    ctx->reply_body = std::move(*body);
    ctx->resp.headers.set("Content-Type", api->content_type);
  } else {
    ctx->reply_status = 404;
    ctx->reply_body.clear();
  }
  worker->host->resume(token, Action::kReply);
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"public-api", 501, false, check, make, kSchema};
  return kInfo;
}

// APISIX sets $uri to conf.uri and matches its API router (exact uri, the API's methods:
// prometheus's is GET only); no match is 404. The page is made on the control thread, which
// owns the metrics' sums, and the request waits for it like any asynchronous answer.
Action PublicApi::access(Context& ctx) const {
  const std::string_view uri = conf_.uri ? std::string_view(*conf_.uri) : ctx.req->uri;
  const ApiRegistry::Api* api = apis_ ? apis_->find(uri) : nullptr;
  if (api == nullptr || ctx.req->method != http::Method::kGet || apis_->control == nullptr) {
    ctx.reply_status = 404;
    ctx.reply_body.clear();
    return Action::kReply;
  }
  plugin::WorkerLocal* worker = ctx.worker;
  const uint64_t token = worker->host->suspend(ctx);
  io::EventLoop* worker_loop = worker->loop;
  // Each message holds the registry, so `api` lives until the answer is given.
  apis_->control->post([apis = apis_, worker, worker_loop, token, api] {
    std::optional<std::string> body = api->render();
    worker_loop->post([apis, worker, token, api, body = std::move(body)]() mutable {
      answer(worker, token, api, std::move(body));
    });
  });
  return Action::kPending;
}

}  // namespace sluice::plugins::public_api
