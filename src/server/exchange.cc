// The exchange's life: begin (pin, match, plugins), the route's own verdicts, gateway-made
// replies, the end (log phase, the try's connection released), timeouts. The tries live in
// exchange_upstream.cc, the upstream head in exchange_head.cc, the response in
// exchange_response.cc, the plugin phases in exchange_plugins.cc.

#include "server/exchange.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/log.h"
#include "server/worker.h"

namespace sluice::server {

Exchange::Exchange(Worker& w, std::unique_ptr<proxy::UpstreamRequest> up)
    : w_(w), h1_up_(std::move(up)), up_(h1_up_.get()) {}

Exchange::~Exchange() {
  if (active()) {
    abort();
  }
}

void Exchange::begin(Downstream& down, const http::RequestHead& req, size_t head_len,
                     const ClientInfo& client) {
  down_ = &down;
  st_ = State{};
  pctx_.cpu_ns = 0;  // the connection adds the time it spends on this request (CpuMeter)
  up_ = h1_up_.get();
  st_.phase = Phase::kAwaitHead;  // placeholder until routed
  st_.req = &req;
  st_.holds_head = true;
  st_.head_len = head_len;
  st_.method = req.method;
  st_.up_method = req.method;
  st_.expect_continue = req.expect_continue;
  st_.has_body = req.body_kind != http::BodyKind::kNone;
  st_.body_length = req.content_length;
  st_.body_chunked = req.body_kind == http::BodyKind::kChunked;
  st_.client = client;
  st_.start_ms = w_.loop().now_ms();
  up_statuses_.clear();
  tries_.clear();
  snap_ = w_.snapshot();
  const router::RouteSpec* spec = nullptr;
  router::MatchContext mctx{&req, client.ip, client.addr, client.local_port};
  mctx.tls = client.tls;
  if (accesslog::Writer* log = w_.access_log()) {
    log_head_.capture(log->format(), mctx, down.request_head());
  }
  if (snap_) {
    spec = snap_->table.match(mctx);
  }
  st_.route = spec != nullptr ? &snap_->routes[spec->index] : nullptr;
  // A route whose plugin_config or service is missing is answered before any plugin runs,
  // global rules included: apisix/init.lua exits before run_global_rules.
  const bool answered_first =
      st_.route != nullptr && (st_.route->target == snapshot::RouteTarget::kPluginConfigMissing ||
                               st_.route->target == snapshot::RouteTarget::kServiceMissing);
  // One test when no plugin is configured anywhere.
  if (snap_ && !answered_first && (snap_->global || (st_.route != nullptr && st_.route->chain))) {
    begin_plugins(mctx);
    if (chains_.needs_body() && st_.has_body) [[unlikely]] {
      keep_head();
      if (st_.expect_continue) {
        down_->send_continue();
      }
      body_.clear();
      st_.phase = Phase::kReadBody;
      arm(w_.settings().body_timeout_ms);
      return;
    }
    if (!run_request_plugins()) {
      return;
    }
  }
  route_request();
}

void Exchange::keep_head() {
  std::string_view raw = down_->request_head();
  head_bytes_.assign(raw);
  head_copy_ = *st_.req;
  head_copy_.rebase(raw.data(), raw.size(), head_bytes_.data());
  st_.req = &head_copy_;
  pctx_.req = &head_copy_;
  pctx_.match.req = &head_copy_;
  down_->release_head();
  st_.holds_head = false;
}

// For a plugin that needs_body(): the whole body, up to its cap, before the request phases.
Exchange::Step Exchange::read_whole_body() {
  uint64_t cap = kMaxBufferedBody;
  if (w_.settings().client_max_body_size != 0) {
    cap = std::min(cap, w_.settings().client_max_body_size);
  }
  while (true) {
    std::string_view piece;
    switch (down_->read_body(&piece)) {
      case Downstream::Body::kData:
        if (body_.size() + piece.size() > cap) {
          SLUICE_LOG(kInfo, "client {}: request body over the {} bytes a plugin may read",
                     st_.client.ip, cap);
          reply(413, {}, false);
          return Step::kProgress;
        }
        body_.append(piece);
        down_->consume_body();
        continue;
      case Downstream::Body::kWait:
        arm(w_.settings().body_timeout_ms);
        return Step::kWait;
      case Downstream::Body::kBad:
        SLUICE_LOG(kInfo, "client {}: bad chunked request body", st_.client.ip);
        reply(400, {}, true);
        return Step::kProgress;
      case Downstream::Body::kClosed:
        close_early();
        return Step::kClose;
      case Downstream::Body::kEnd:
        break;
    }
    break;
  }
  // Sent on with its length now known, and again to another node if a try fails.
  st_.body_buffered = true;
  st_.body_chunked = false;
  st_.body_length = body_.size();
  pctx_.request_body = body_;
  pctx_.bytes_in += body_.size();
  st_.phase = Phase::kAwaitHead;  // placeholder until routed
  io::TimerQueue::cancel(timer_);
  if (run_request_plugins()) {
    route_request();
  }
  return Step::kProgress;
}

Exchange::Step Exchange::step() {
  switch (st_.phase) {
    case Phase::kIdle:
    case Phase::kDone:
      return Step::kDone;
    case Phase::kClosed:
      return Step::kClose;
    case Phase::kReadBody:
      return read_whole_body();
    case Phase::kPluginWait:
      return Step::kWait;
    case Phase::kConnect:
    case Phase::kSend:
      return send_request();
    case Phase::kAwaitHead:
      return read_response_head();
    case Phase::kStream:
      return stream_response();
    case Phase::kReply:
      return write_reply();
    case Phase::kSource:
      return stream_source();
    case Phase::kUpgrade:
      return write_upgrade();
    case Phase::kTunnel:
      return run_tunnel();
  }
  return Step::kDone;
}

// After the request phases: the route's own verdicts (404, 503, 413), then the upstream.
void Exchange::route_request() {
  if (st_.plugins) {
    // A plugin (real-ip) may have named another client: the upstream request, the balancer
    // and the logs take it from here on, as nginx's set_real_ip changes $remote_addr.
    st_.client.ip = pctx_.match.remote_addr;
    st_.client.addr = pctx_.match.remote_ip;
  }
  const snapshot::Route* route = st_.route;
  if (route == nullptr) {
    reply(404, "{\"error_msg\":\"404 Route Not Found\"}\n", false);
    return;
  }
  const snapshot::RouteTarget target = choose_upstream();
  int status = 0;
  std::string_view msg;
  if (target == snapshot::RouteTarget::kServiceMissing) {
    status = 404;
    msg = "{\"error_msg\":\"404 Route Not Found\"}\n";
  } else if (target == snapshot::RouteTarget::kUpstreamMissing) {
    status = 502;
  } else if (target == snapshot::RouteTarget::kPluginConfigMissing) {
    status = 503;
  } else if (target == snapshot::RouteTarget::kNoUpstream) {
    status = 503;
    msg = "{\"error_msg\":\"missing upstream configuration in Route or Service\"}\n";
  } else if (!st_.up_conf->any_resolved) {  // no nodes, or none resolves
    status = 503;
    msg = "{\"error_msg\":\"no valid upstream node\"}\n";
  } else if (!st_.up_conf->tls_error.empty()) {  // https, and its client certificate is gone
    report_failure(st_.up_conf->tls_error);
    status = 502;
  } else if (w_.settings().client_max_body_size != 0 && st_.has_body && !st_.body_chunked &&
             st_.body_length > w_.settings().client_max_body_size) {
    status = 413;
  }
  if (status != 0) {
    reply(status, msg, false);
    return;
  }
  if (!prepare_protocol()) {
    return;
  }
  st_.lb_hash = balancer_hash();
  build_upstream_head();
  release_head();
  if (st_.expect_continue && st_.has_body && !st_.body_buffered) {
    down_->send_continue();
  }
  st_.tries_left = st_.up_conf->retries;
  st_.first_try_ms = w_.loop().now_ms();
  if (!connect_next()) {
    // A node whose connect failed was reported; none tried: every node has weight 0.
    upstream_failed(502, "no node reachable", st_.node >= 0);
  }
}

void Exchange::release_head() {
  if (st_.holds_head) {
    down_->release_head();
  }
  st_.req = nullptr;
  st_.holds_head = false;
  if (st_.plugins) {
    pctx_.req = nullptr;
    pctx_.match.req = nullptr;
  }
}

// A gateway-made response: header_filter edits the head; the body is whole, so body_filter
// sees it as one last piece before its length is written.
void Exchange::reply(int status, std::string_view body, bool close) {
  end_try(false);
  release_head();
  forget_plugin_wait();
  reply_body_.assign(body);
  if (body.empty() && status >= 400) {
    reply_body_ = fmt::format("{{\"error_msg\":\"{} {}\"}}\n", status, status_reason(status));
  }
  std::string_view type;
  if (!reply_body_.empty()) {
    type = reply_body_.front() == '{' ? "application/json" : "text/plain";
  }
  const plugin::HeaderEdits* edits = nullptr;
  if (st_.plugins) {
    plugin_header_filter(status, nullptr);
    if (pctx_.resp.status != 0) {
      status = pctx_.resp.status;
    }
    std::string_view out = plugin::run_body_filter(chains_, pctx_, reply_body_, true);
    if (out.data() != reply_body_.data() || out.size() != reply_body_.size()) {
      reply_body_.assign(out);
    }
    if (!pctx_.resp.headers.empty()) {
      edits = &pctx_.resp.headers;
    }
  }
  fields_.clear();
  if (edits == nullptr || !edits->drops("date")) {
    fields_.push_back({"Date", w_.http_date()});
  }
  if (!type.empty() && (edits == nullptr || !edits->drops("content-type"))) {
    fields_.push_back({"Content-Type", type});
  }
  if (!up_statuses_.empty() && (status >= 500 || w_.settings().show_upstream_status)) {
    // The gateway's 502/504 after its tries (APISIX sets it from $upstream_status).
    fields_.push_back({"X-APISIX-Upstream-Status", up_statuses_});
  }
  if (edits != nullptr) {
    add_edited_fields(*edits);
  }
  // RFC 9110 8.6: no Content-Length (and no body) on 1xx or 204; 304 has none to describe.
  bool bodiless = status < 200 || status == 204 || status == 304;
  ResponseStart r;
  r.status = status;
  r.upstream_fields = {};
  r.fields = fields_;
  r.content_length = bodiless ? -1 : static_cast<int64_t>(reply_body_.size());
  r.bodiless = bodiless || st_.method == http::Method::kHead;
  r.gateway_made = true;
  r.close = close;
  st_.status = status;
  down_->send_head(r);
  st_.response_started = true;
  if (!r.bodiless && !reply_body_.empty()) {
    down_->send_data(reply_body_);
    pctx_.bytes_out += reply_body_.size();
  }
  down_->send_end();
  st_.phase = Phase::kReply;
  io::TimerQueue::cancel(timer_);  // a slow client is the connection's send timeout
}

bool Exchange::flushed(Step* step) {
  switch (down_->flush()) {
    case Downstream::Flush::kWait:
      *step = Step::kWait;
      return false;
    case Downstream::Flush::kClosed:
      close_early();
      *step = Step::kClose;
      return false;
    case Downstream::Flush::kDone:
      break;
  }
  return true;
}

Exchange::Step Exchange::write_reply() {
  if (Step step; !flushed(&step)) {
    return step;
  }
  log_request();
  if (st_.plugins) {
    end_plugins();
  }
  io::TimerQueue::cancel(timer_);
  snap_.reset();
  st_.phase = Phase::kDone;
  return Step::kDone;
}

// The response went out whole: the log phase, the connection back to the pool.
Exchange::Step Exchange::finish() {
  log_request();
  if (st_.plugins) {
    pctx_.upstream_end_ns = pctx_.timed ? plugin::monotonic_ns() : 0;
    end_plugins();
  }
  bool reusable = up_->reusable() && st_.body_sent && !st_.early;
  node_finished(true);
  end_try(reusable);
  io::TimerQueue::cancel(timer_);
  snap_.reset();
  st_.phase = Phase::kDone;
  return Step::kDone;
}

void Exchange::abort() {
  if (active()) {
    close_early();
  }
  st_.phase = Phase::kIdle;
}

void Exchange::close_early() {
  log_request();
  if (tunnel_) {
    drop_tunnel();  // before the connections it relays between go
  }
  forget_plugin_wait();
  if (st_.plugins) {
    end_plugins();
  }
  io::TimerQueue::cancel(timer_);
  end_try(false);
  snap_.reset();
  st_.req = nullptr;
  st_.holds_head = false;
  st_.phase = Phase::kClosed;
}

void Exchange::end_try(bool reusable) {
  node_finished(false);
  up_->release(reusable);
}

void Exchange::upstream_failed(int status, std::string_view why, bool logged) {
  if (!logged) {
    report_failure(why);
  }
  if (st_.response_started) {
    close_early();
    return;
  }
  if (st_.grpc) {
    grpc_reply(status, why);
    return;
  }
  reply(status, {}, false);
}

void Exchange::arm(uint32_t ms) { w_.loop().arm(timer_, ms); }

void Exchange::on_timer(void* self) {
  auto* ex = static_cast<Exchange*>(self);
  ex->handle_timeout();
  ex->down_->wake();
}

void Exchange::on_upstream_event() { down_->wake(); }

void Exchange::handle_timeout() {
  switch (st_.phase) {
    case Phase::kConnect:
      st_.up_conf->report_failure(st_.node, health::Failure::kTimeout);
      try_next_or_fail(504, "connect timeout");
      return;
    case Phase::kSend:
      if (up_->queued()) {
        try_next_or_fail(504, "send timeout");
        return;
      }
      break;  // the client stopped sending its body
    case Phase::kAwaitHead:
      st_.up_conf->report_failure(st_.node, health::Failure::kTimeout);
      try_next_or_fail(504, "read timeout");
      return;
    case Phase::kTunnel:
      tunnel_timeout();
      return;
    default:
      break;
  }
  if (!st_.response_started && (st_.phase == Phase::kReadBody || st_.phase == Phase::kSend)) {
    st_.status = 408;  // the client stopped sending its body: nginx logs 408, not 499
  }
  close_early();
}

}  // namespace sluice::server
