#include "plugins/api_breaker/api_breaker.h"

#include "io/event_loop.h"

namespace sluice::plugins::api_breaker {

using plugin::Action;
using plugin::Context;

namespace {

// Slots of the node-wide table (16 bytes each): keys are host + uri per route and conf.
constexpr size_t kTableSlots = size_t{1} << 16;

uint64_t fnv(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  return h;
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  auto table = env.shared.get<BreakerTable>(
      "api-breaker/table", [] { return std::make_shared<BreakerTable>(kTableSlots); });
  // The owner and the conf name the state: editing the conf starts a clean one.
  const uint64_t scope = fnv(std::string(env.owner) + '\n' + json.dump());
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<ApiBreaker>(std::move(conf).value(), scope, std::move(table)));
}

// ngx.var.host: the host without its port, in lower case.
std::string_view host_of(std::string_view h) {
  if (!h.empty() && h.front() == '[') {
    size_t end = h.find(']');
    return end == std::string_view::npos ? h : h.substr(0, end + 1);
  }
  size_t colon = h.rfind(':');
  return colon == std::string_view::npos ? h : h.substr(0, colon);
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"api-breaker", 1005, false, check, make, kSchema};
  return kInfo;
}

ApiBreaker::ApiBreaker(Conf conf, uint64_t scope, std::shared_ptr<BreakerTable> table)
    : conf_(std::move(conf)), scope_(scope), table_(std::move(table)) {
  rule_.failures = conf_.failures;
  rule_.successes = conf_.successes;
  rule_.max_breaker_sec = conf_.max_breaker_sec;
}

uint64_t ApiBreaker::request_key(const Context& ctx) {
  if (ctx.req == nullptr) {
    return 0;
  }
  std::string_view host = host_of(ctx.req->host);
  uint64_t h = 0x84222325cbf29ce4ULL;
  for (unsigned char c : host) {
    h = (h ^ static_cast<unsigned char>(c >= 'A' && c <= 'Z' ? c + 32 : c)) * 0x100000001b3ULL;
  }
  return breaker_key(h, "", ctx.req->uri);
}

uint64_t ApiBreaker::key(uint64_t request) const { return breaker_key(scope_ ^ request, "", ""); }

bool ApiBreaker::listed(const std::vector<int>& list, int status) {
  for (int s : list) {
    if (s == status) {
      return true;
    }
  }
  return false;
}

Action ApiBreaker::access(Context& ctx) const {
  if (ctx.breaker_key == 0) {
    ctx.breaker_key = request_key(ctx);
  }
  const uint64_t now_s = ctx.worker->loop->now_ms() / 1000;
  if (!table_->broken(key(ctx.breaker_key), rule_, now_s)) {
    return Action::kContinue;
  }
  ctx.reply_status = conf_.break_response_code;
  ctx.reply_body.clear();
  if (conf_.has_body) {
    // APISIX adds break_response_headers only along with a body.
    std::string& value = ctx.scratch;
    for (const auto& [name, tmpl] : conf_.break_response_headers) {
      tmpl.render(ctx, ctx.match, &value);
      ctx.resp.headers.add(name, value);
    }
    ctx.reply_body = conf_.break_response_body;
  }
  return Action::kReply;
}

void ApiBreaker::header_filter(Context& ctx) const {
  // Only an upstream's answer counts (APISIX reads $upstream_status): the gateway's own replies
  // do not, its 502/504 after failed tries do.
  if (ctx.breaker_key == 0 || ctx.upstream_ip.empty()) {
    return;
  }
  const int status = ctx.upstream_resp != nullptr ? ctx.upstream_resp->status : ctx.status;
  const uint64_t k = key(ctx.breaker_key);
  if (listed(conf_.unhealthy_statuses, status)) {
    table_->unhealthy(k, rule_, ctx.worker->loop->now_ms() / 1000);
  } else if (listed(conf_.healthy_statuses, status)) {
    table_->healthy(k, rule_);
  }
}

}  // namespace sluice::plugins::api_breaker
