// The plugin path of an exchange: set up the request's plugin context, run the request
// phases (which may suspend on an asynchronous hook and resume later), then header_filter
// when the response head is built and log when the exchange ends.

#include <algorithm>

#include "common/log.h"
#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// The route's uri pattern that `path` matches, as APISIX's matched_uri reports it.
std::string_view matched_pattern(const std::vector<std::string>& uris, std::string_view path) {
  for (const std::string& u : uris) {
    std::string_view p = u;
    if (!p.empty() && p.back() == '*') {
      if (path.starts_with(p.substr(0, p.size() - 1))) {
        return u;
      }
    } else if (path == p) {
      return u;
    }
  }
  return uris.empty() ? std::string_view() : std::string_view(uris.front());
}

// The route's host that `host` matches (case-insensitive, `*.` wildcards); empty if none.
std::string_view matched_host(const std::vector<std::string>& hosts, std::string_view host) {
  if (size_t colon = host.rfind(':'); colon != std::string_view::npos && host.front() != '[') {
    host = host.substr(0, colon);
  }
  for (const std::string& h : hosts) {
    std::string_view p = h;
    if (p.starts_with("*.")) {
      std::string_view suffix = p.substr(1);
      if (host.size() > suffix.size() &&
          http::iequals(host.substr(host.size() - suffix.size()), suffix)) {
        return h;
      }
    } else if (http::iequals(host, p)) {
      return h;
    }
  }
  return {};
}

const plugin::Consumers& no_consumers() {
  static const plugin::Consumers kNone;
  return kNone;
}

}  // namespace

void Exchange::begin_plugins(const router::MatchContext& m) {
  plugin::Context& c = pctx_;
  c.reset();
  c.req = st_.req;
  c.match = m;
  c.worker = &w_.plugin_local();
  c.conn = this;
  c.snapshot = snap_.get();
  c.consumers = snap_->consumers ? snap_->consumers.get() : &no_consumers();
  c.route = st_.route;
  const snapshot::Route* route = st_.route;
  chains_ = {snap_->global.get(), route != nullptr ? route->chain.get() : nullptr};
  if (route != nullptr) {
    c.route_id = route->id;
    c.service_id = route->service_id;
    c.route_name = route->name;
    c.service_name = route->service_name;
  }
  c.timed = chains_.timed();
  if (c.timed) {
    c.start_ns = plugin::monotonic_ns();
    c.bytes_in = st_.head_len;
    if (route != nullptr) {
      c.matched_uri = matched_pattern(route->uris, st_.req->uri);
      c.matched_host = matched_host(route->hosts, st_.req->host);
    }
  }
  plugin::prepare(chains_, c);
  st_.plugins = true;
}

// Runs the request phases; false when the request was answered or suspended.
bool Exchange::run_request_plugins() {
  if (st_.consumer_stage == ConsumerStage::kRouteRewrite) {
    if (!plugin_verdict(plugin::run_request(chains_, pctx_, plugin::Phase::kRewrite))) {
      return false;
    }
    st_.consumer_stage = ConsumerStage::kRest;
    if (pctx_.credential != nullptr && !merge_consumer()) {
      return false;
    }
  }
  if (st_.consumer_stage == ConsumerStage::kConsumerRewrite) {
    // Only the plugins the merge added: the global rules' and the route's rewrite has run.
    plugin::Chains added{nullptr, chains_.route};
    if (!plugin_verdict(plugin::run_request(added, pctx_, plugin::Phase::kRewrite))) {
      return false;
    }
    st_.consumer_stage = ConsumerStage::kRest;
  }
  plugin::Phase last = st_.route != nullptr ? plugin::Phase::kBeforeProxy : plugin::Phase::kAccess;
  return plugin_verdict(plugin::run_request(chains_, pctx_, last));
}

bool Exchange::merge_consumer() {
  const plugin::Consumer& c = *pctx_.credential->consumer;
  if (c.group_missing) {
    SLUICE_LOG(kError, "failed to fetch consumer group config by id: {}", c.group_id);
    reply(503, {}, false);
    return false;
  }
  if (!c.chain) {
    return true;
  }
  merged_ = w_.merged_chains().get(snap_->version, chains_.route, c);
  if (!merged_) {
    SLUICE_LOG(kError,
               "route {}: consumer {}: more than {} plugins once merged; its plugins "
               "are not applied",
               pctx_.route_id, c.name, plugin::Chain::kMaxEntries);
    reply(500, {}, false);
    return false;
  }
  chains_.route = merged_.get();
  // The filters and prefer_route verdicts, for the merged chain's entries.
  pctx_.skip_route = merged_->filter_mask(pctx_.match);
  if (chains_.global != nullptr) {
    pctx_.skip_global =
        chains_.global->filter_mask(pctx_.match) | chains_.global->preferred_by(*merged_);
  }
  if (!pctx_.timed && chains_.timed()) {
    pctx_.timed = true;
    pctx_.start_ns = plugin::monotonic_ns();
    pctx_.bytes_in = st_.head_len;
  }
  if (merged_->has(plugin::Phase::kRewrite)) {
    st_.consumer_stage = ConsumerStage::kConsumerRewrite;
    pctx_.phase = plugin::Phase::kRewrite;
    pctx_.cursor = 0;
  }
  return true;
}

bool Exchange::plugin_verdict(plugin::Action a) {
  if (a == plugin::Action::kPending) {
    st_.phase = Phase::kPluginWait;
    arm(w_.settings().header_timeout_ms);  // the hook's own timeout comes first
    return false;
  }
  if (a == plugin::Action::kReply) {
    plugin_reply();
    return false;
  }
  return true;
}

void Exchange::on_plugin_resume(plugin::Action a) {
  st_.plugin_wait = 0;
  if (st_.consumer_stage == ConsumerStage::kConsumerRewrite) {
    plugin::resumed({nullptr, chains_.route}, pctx_, a);
  } else {
    plugin::resumed(chains_, pctx_, a);
  }
  if (a == plugin::Action::kReply) {
    plugin_reply();
  } else if (run_request_plugins()) {
    route_request();
  }
  down_->wake();
}

void Exchange::forget_plugin_wait() {
  if (st_.plugin_wait != 0) {
    w_.plugin_forget(st_.plugin_wait);
    st_.plugin_wait = 0;
  }
}

void Exchange::plugin_header_filter(int status, const http::ResponseHead* upstream_head) {
  pctx_.status = status;
  pctx_.upstream_resp = upstream_head;
  plugin::run_response(chains_, pctx_, plugin::Phase::kHeaderFilter);
  pctx_.upstream_resp = nullptr;
  if (pctx_.resp.status != 0) {
    pctx_.status = pctx_.resp.status;  // the log phase records what the client got
  }
}

void Exchange::end_plugins() {
  st_.plugins = false;
  plugin::Context& c = pctx_;
  if (c.status == 0) {
    c.status = 499;  // nginx's code for a request the client gave up on before any answer
  }
  // The access log's $request_length and $bytes_sent: the bodies with their chunk framing,
  // which the pieces summed on the way lack. A tunnel's bytes (an upgrade has no body) were
  // added when it ended.
  c.bytes_in = down_->request_bytes();
  c.bytes_out = std::max(c.bytes_out, down_->body_bytes()) + down_->head_bytes();
  if (c.trace.owner != nullptr) [[unlikely]] {
    trace_tries();
  }
  plugin::run_response(chains_, c, plugin::Phase::kLog);
  merged_.reset();
  c.req = nullptr;
  c.match.req = nullptr;
}

// The tracer's tries get their statuses (noted by the access log's record as they went) and the
// one still open its end: the response ends with the request.
void Exchange::trace_tries() {
  auto& tries = pctx_.trace.tries;
  std::span<const accesslog::UpstreamTry> noted = tries_.all();
  for (size_t i = 0; i < tries.size() && i < noted.size(); ++i) {
    tries[i].status = noted[i].status;
  }
  if (!tries.empty() && tries.back().end_ns == 0) {
    tries.back().end_ns = plugin::monotonic_ns();
  }
}

}  // namespace sluice::server
