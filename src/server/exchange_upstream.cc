// The exchange's tries: pick a node (the balancer is told when a try begins and how it ends),
// open the try's upstream request, send the head and pump the request body up with
// backpressure, and on a failure move to the next node as the upstream's retries,
// retry_timeout and the request's own state allow. A pooled connection the upstream had
// closed gets one fresh retry on the same node, here and nowhere else.

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/strings.h"
#include "server/exchange.h"
#include "server/worker.h"
#include "upstream/balancer.h"

namespace sluice::server {

snapshot::RouteTarget Exchange::choose_upstream() {
  using snapshot::RouteTarget;
  const snapshot::Route& r = *st_.route;
  st_.up_conf = r.upstream;
  st_.timeouts = r.timeouts;
  // A missing service or plugin_config answers before any plugin could choose.
  if (!st_.plugins || r.target == RouteTarget::kServiceMissing ||
      r.target == RouteTarget::kPluginConfigMissing) {
    return r.target;
  }
  if (pctx_.upstream_missing) {
    return RouteTarget::kUpstreamMissing;  // APISIX: "failed to find upstream by id", 502
  }
  if (pctx_.upstream_override != nullptr) {
    st_.up_conf = pctx_.upstream_override;
    if (!r.own_timeout) {
      st_.timeouts = st_.up_conf->timeouts;
    }
    return RouteTarget::kUpstream;
  }
  return r.target;
}

uint64_t Exchange::balancer_hash() const {
  if (st_.up_conf->type != upstream::BalancerType::kChash) [[likely]] {
    return 0;
  }
  router::MatchContext m{st_.req, st_.client.ip, st_.client.addr, st_.client.local_port};
  m.tls = st_.client.tls;
  return st_.up_conf->hash_key.hash(m, st_.plugins ? pctx_.consumer : std::string_view());
}

int Exchange::pick_node() {
  // Unhealthy nodes are skipped unless all are (then the mask reads 0: APISIX balances
  // across all of them).
  upstream::PickArgs args{st_.tried | st_.up_conf->unhealthy_mask(), st_.lb_hash,
                          w_.loop().now_ms()};
  return w_.balancer(*st_.up_conf).pick(*st_.up_conf, args);
}

void Exchange::node_started(int node) {
  node_finished(false);  // a try whose connect failed synchronously
  st_.lb = &w_.balancer(*st_.up_conf);
  st_.lb_generation = w_.balancer_generation();
  st_.lb_node = node;
  st_.lb_start_ms = w_.loop().now_ms();
  st_.lb->started(*st_.up_conf, node);
  tries_.start(st_.up_conf->nodes[node].addr_key, st_.lb_start_ms);
  if (st_.plugins && pctx_.trace.owner != nullptr) [[unlikely]] {
    pctx_.trace.tries.push_back({st_.up_conf->nodes[node].addr_key, 0, plugin::monotonic_ns(), 0});
  }
}

void Exchange::node_finished(bool completed) {
  if (st_.lb_node < 0) {
    return;
  }
  int node = st_.lb_node;
  st_.lb_node = -1;
  tries_.end(w_.loop().now_ms());
  if (st_.plugins && pctx_.trace.owner != nullptr && !pctx_.trace.tries.empty()) [[unlikely]] {
    if (pctx_.trace.tries.back().end_ns == 0) {
      pctx_.trace.tries.back().end_ns = plugin::monotonic_ns();
    }
  }
  if (st_.lb_generation != w_.balancer_generation()) {
    return;  // the balancers were replaced since; this try is not theirs
  }
  upstream::Outcome outcome = completed           ? upstream::Outcome::kOk
                              : !up_->connected() ? upstream::Outcome::kConnectFailed
                                                  : upstream::Outcome::kFailed;
  uint64_t now = w_.loop().now_ms();
  st_.lb->finished(*st_.up_conf, node, outcome, now - st_.lb_start_ms, now);
}

bool Exchange::connect_next() {
  while (true) {
    int node = pick_node();
    if (node < 0) {
      return false;
    }
    if (node < 64) {
      st_.tried |= uint64_t{1} << node;
    }
    if (start_try(node, false)) {
      return true;
    }
    note_try(502);
    if (!retry_allowed()) {
      return false;
    }
  }
}

void Exchange::note_try(int status) {
  tries_.failed(status);
  if (!up_statuses_.empty()) {
    up_statuses_.append(", ");
  }
  common::append_uint(up_statuses_, static_cast<uint64_t>(status));
}

// The request may go to another node: no response byte reached the client, no body byte left
// the client buffer, and a non-idempotent request reached no upstream.
bool Exchange::can_send_again() const {
  return !st_.response_started && !st_.body_taken &&
         (!st_.req_written || http::is_idempotent(st_.up_method));
}

// Spends one of the tries left, if the request may be sent again and retry_timeout allows.
bool Exchange::retry_allowed() {
  if (st_.tries_left <= 0 || !can_send_again()) {
    return false;
  }
  if (st_.up_conf->retry_timeout_ms != 0 &&
      w_.loop().now_ms() - st_.first_try_ms >= st_.up_conf->retry_timeout_ms) {
    return false;
  }
  --st_.tries_left;
  return true;
}

// After a failed try (`status` 502 for an error, 504 for a timeout): another node when the
// request may be sent again and tries and retry_timeout allow it, else answers `status`.
void Exchange::try_next_or_fail(int status, std::string_view why, bool logged) {
  if (!logged) {
    report_failure(why);
  }
  note_try(status);
  end_try(false);
  if (retry_allowed() && connect_next()) {
    return;
  }
  upstream_failed(status, why, true);
}

// "upstream failure: route 7, upstream 3, node 10.0.0.5:80: connect failed: Connection
// refused (client 192.0.2.1)". An inline upstream is named by its owner; with no node (none
// could be picked) the node is "-". Repeats of the same failure within the window are counted
// and reported with the next line.
void Exchange::report_failure(std::string_view why) {
  const snapshot::Route& r = *st_.route;
  const std::string& up = st_.up_conf->id;
  std::string_view node =
      st_.node >= 0 ? std::string_view(st_.up_conf->nodes[st_.node].addr_key) : "-";
  std::string key = fmt::format("{}\n{}\n{}\n{}", r.id, up, node, why);
  uint64_t repeats = w_.incidents().admit(key, w_.loop().now_ms());
  if (repeats == IncidentLog::kNotNow) {
    return;
  }
  std::string owner;
  if (up.starts_with("route:") || up.starts_with("service:")) {
    size_t colon = up.find(':');
    owner = fmt::format("the inline upstream of {} {}", up.substr(0, colon), up.substr(colon + 1));
  } else {
    owner = "upstream " + up;
  }
  std::string more;
  if (repeats != 0) {
    more = fmt::format("; {} more like it since the last report", repeats);
  }
  SLUICE_LOG(kError, "upstream failure: route {}, {}, node {}: {} (client {}){}", r.id, owner, node,
             why, st_.client.ip, more);
}

bool Exchange::can_retry_idle_failure() const {
  return up_->reused() && !st_.retried_idle && !st_.response_started &&
         http::is_idempotent(st_.up_method) && !st_.has_body && !up_->has_input();
}

// A pooled connection the upstream had closed: one fresh try on the same node, for an
// idempotent request without a body. False when that does not apply.
bool Exchange::retry_idle(const char* why) {
  if (!can_retry_idle_failure()) {
    return false;
  }
  SLUICE_LOG(kInfo, "upstream {}: pooled connection {}; retrying on a new one",
             st_.up_conf->nodes[st_.node].addr_key, why);
  int node = st_.node;
  end_try(false);
  st_.retried_idle = true;
  if (!start_try(node, true)) {
    try_next_or_fail(502, "reconnect failed", true);  // start_try reported why
  }
  return true;
}

bool Exchange::start_try(int node, bool fresh) {
  const upstream::Node& n = st_.up_conf->nodes[node];
  st_.node = node;
  node_started(node);
  if (st_.plugins) {
    pctx_.upstream_ip = n.ip;
    pctx_.upstream_port = n.port;
  }
  if (st_.plugins && pctx_.timed) {
    if (pctx_.upstream_start_ns == 0) {
      pctx_.upstream_start_ns = plugin::monotonic_ns();
    }
  }
  const upstream::Upstream& u = *st_.up_conf;
  proxy::Target t{&n.addr,        &n.addr_key,     host_for(node),          u.pool_size,
                  u.pool_idle_ms, u.pool_requests, u.tls ? &u.tls : nullptr};
  int err = 0;
  if (!up_->open(t, fresh, this, &err)) {
    report_failure(fmt::format("connect failed: {}", strerror(err)));
    st_.up_conf->report_failure(node, health::Failure::kTcp);
    return false;
  }
  st_.up_piece = false;
  st_.body_sent = false;
  if (up_->reused()) {
    tries_.connected(w_.loop().now_ms());
    st_.phase = Phase::kSend;
    arm(st_.timeouts.send_ms);
  } else {
    st_.phase = Phase::kConnect;
    arm(st_.timeouts.connect_ms);
  }
  return true;
}

Exchange::Step Exchange::send_request() {
  while (true) {
    if (!st_.up_piece && !st_.body_sent && up_->connected()) {
      Step s = pump_request_body();
      if (st_.phase != Phase::kSend) {
        return Step::kProgress;  // answered (a bad body) or closed
      }
      if (s == Step::kWait && !up_->queued()) {
        if (up_->answered_early()) {
          return relay_early_answer();
        }
        if (st_.grpc && up_->has_input()) {
          // A gRPC server answers while the client still streams (bidirectional calls):
          // the response starts now and the request body keeps flowing beside it.
          st_.duplex = true;
          st_.phase = Phase::kAwaitHead;
          arm(st_.timeouts.read_ms);
          return Step::kProgress;
        }
        arm(w_.settings().body_timeout_ms);
        return Step::kWait;
      }
    }
    bool was_connecting = !up_->connected();
    int err = 0;
    proxy::UpstreamRequest::Send r = up_->send(&err);
    if (was_connecting && up_->connected()) {
      tries_.connected(w_.loop().now_ms());
      st_.phase = Phase::kSend;
      arm(st_.timeouts.send_ms);
    }
    switch (r) {
      case proxy::UpstreamRequest::Send::kWait:
        st_.req_written = st_.req_written || up_->written();
        if (up_->connected() && up_->written() && up_->queued()) {
          arm(st_.timeouts.send_ms);
        }
        return Step::kWait;
      case proxy::UpstreamRequest::Send::kConnectFailed:
        // A refused TLS handshake (a certificate that fails verification) says why itself.
        report_failure(up_->error().empty() ? fmt::format("connect failed: {}", strerror(err))
                                            : std::string(up_->error()));
        st_.up_conf->report_failure(st_.node, health::Failure::kTcp);
        try_next_or_fail(502, "connect failed", true);
        return Step::kProgress;
      case proxy::UpstreamRequest::Send::kWriteFailed:
        return upstream_write_failed(err);
      case proxy::UpstreamRequest::Send::kDone:
        break;
    }
    st_.req_written = st_.req_written || up_->written();
    if (st_.up_piece) {
      down_->consume_body();
      st_.up_piece = false;
    }
    if (st_.body_sent || !st_.has_body) {
      st_.body_sent = true;
      st_.phase = Phase::kAwaitHead;
      st_.received = up_->received();
      arm(st_.timeouts.read_ms);
      return Step::kProgress;
    }
  }
}

// Queues the next piece of the request body, or its end, on the upstream request.
Exchange::Step Exchange::pump_request_body() {
  if (st_.body_buffered) {
    up_->add_body(body_, false);
    up_->add_body_end(false);
    st_.body_sent = true;
    return Step::kProgress;
  }
  std::string_view piece;
  switch (down_->read_body(&piece)) {
    case Downstream::Body::kData:
      st_.body_taken = true;  // from here on the body cannot be sent to another node
      if (st_.plugins) {
        pctx_.bytes_in += piece.size();
      }
      up_->add_body(piece, st_.body_chunked);
      st_.up_piece = true;
      return Step::kProgress;
    case Downstream::Body::kEnd:
      up_->add_body_end(st_.body_chunked);
      st_.body_sent = true;
      return Step::kProgress;
    case Downstream::Body::kWait:
      return Step::kWait;
    case Downstream::Body::kBad:
      SLUICE_LOG(kInfo, "client {}: bad chunked request body", st_.client.ip);
      reply(400, {}, true);
      return Step::kProgress;
    case Downstream::Body::kClosed:
      close_early();  // the client went away mid-body
      return Step::kProgress;
  }
  return Step::kProgress;
}

// The upstream answered before the request was whole (a 413, a 401, even a 200): its answer
// goes to the client now rather than after a body that may never come (nginx does the same);
// the rest of the request body is left unread, the client connection closes after the answer
// (lingering, so the client reads it), and the upstream connection is not reused.
Exchange::Step Exchange::relay_early_answer() {
  SLUICE_LOG(kInfo,
             "upstream {} answered before the request body was complete; relaying the answer to "
             "{}, then closing",
             st_.up_conf->nodes[st_.node].addr_key, st_.client.ip);
  st_.early = true;
  st_.phase = Phase::kAwaitHead;
  st_.received = up_->received();
  arm(st_.timeouts.read_ms);
  return Step::kProgress;
}

Exchange::Step Exchange::upstream_write_failed(int err) {
  if (retry_idle("closed before the request was written")) {
    return Step::kProgress;
  }
  if (up_->answered_early()) {
    return relay_early_answer();  // e.g. a 413, and the upstream closed
  }
  try_next_or_fail(502, fmt::format("write failed: {}", strerror(err)));
  return Step::kProgress;
}

}  // namespace sluice::server
