// A gRPC upstream (scheme grpc): the request goes up over HTTP/2 (H2UpstreamRequest), the
// client's grpc-timeout caps the upstream timeouts, and a request no upstream answered gets a
// gRPC status rather than an HTTP error page a gRPC client cannot read.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "proxy/grpc.h"
#include "proxy/h2_upstream_request.h"
#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

bool Exchange::prepare_protocol() {
  if (!st_.up_conf->grpc) [[likely]] {
    return true;
  }
  if (st_.req->version_major != 2) {
    // gRPC is HTTP/2 end to end (trailers carry its status): an HTTP/1.1 client would get
    // an answer whose status it never sees.
    reply(400, "{\"error_msg\":\"gRPC upstreams need an HTTP/2 client\"}\n", false);
    return false;
  }
  st_.grpc = true;
  if (!h2_up_) {
    h2_up_ = std::make_unique<proxy::H2UpstreamRequest>(w_.upstream_env());
  }
  up_ = h2_up_.get();
  if (const http::Header* t = st_.req->find("grpc-timeout")) {
    // The client gives up at its deadline: no upstream phase waits longer than that.
    uint64_t ms = proxy::parse_grpc_timeout(t->value);
    if (ms != 0) {
      auto cap = static_cast<uint32_t>(std::min<uint64_t>(ms, UINT32_MAX));
      st_.timeouts.connect_ms = std::min(st_.timeouts.connect_ms, cap);
      st_.timeouts.send_ms = std::min(st_.timeouts.send_ms, cap);
      st_.timeouts.read_ms = std::min(st_.timeouts.read_ms, cap);
    }
  }
  return true;
}

void Exchange::grpc_reply(int http_status, std::string_view why) {
  end_try(false);
  release_head();
  forget_plugin_wait();
  // A timeout is the deadline's; anything else means no upstream could serve the call.
  bool timeout = http_status == 504;
  int code = timeout ? proxy::kGrpcDeadlineExceeded : proxy::kGrpcUnavailable;
  grpc_message_ =
      fmt::format("{}: {}", timeout ? "upstream timed out" : "upstream unavailable", why);
  char digits[8];
  auto n = fmt::format_to_n(digits, sizeof(digits), "{}", code).size;
  reply_body_.assign(digits, n);  // kept for the head's views until it is written
  fields_.clear();
  fields_.push_back({"Content-Type", "application/grpc"});
  fields_.push_back({"grpc-status", reply_body_});
  fields_.push_back({"grpc-message", grpc_message_});
  if (!up_statuses_.empty()) {
    fields_.push_back({"X-APISIX-Upstream-Status", up_statuses_});
  }
  ResponseStart r;
  r.status = 200;
  r.fields = fields_;
  r.bodiless = true;
  r.gateway_made = true;
  st_.status = 200;
  down_->send_head(r);
  st_.response_started = true;
  down_->send_end();
  st_.phase = Phase::kReply;
  io::TimerQueue::cancel(timer_);  // a slow client is the connection's send timeout
}

bool Exchange::pump_duplex() {
  while (!st_.body_sent) {
    if (!st_.up_piece) {
      std::string_view piece;
      switch (down_->read_body(&piece)) {
        case Downstream::Body::kData:
          st_.body_taken = true;
          if (st_.plugins) {
            pctx_.bytes_in += piece.size();
          }
          up_->add_body(piece, true);
          st_.up_piece = true;
          break;
        case Downstream::Body::kEnd:
          up_->add_body_end(true);
          st_.body_sent = true;
          break;
        case Downstream::Body::kWait:
          return true;  // the client's next DATA frame wakes the stream
        case Downstream::Body::kBad:
        case Downstream::Body::kClosed:
          close_early();
          return false;
      }
    }
    int err = 0;
    switch (up_->send(&err)) {
      case proxy::UpstreamRequest::Send::kWait:
        return true;  // the upstream's window reopens with a WINDOW_UPDATE, which wakes us
      case proxy::UpstreamRequest::Send::kConnectFailed:
      case proxy::UpstreamRequest::Send::kWriteFailed:
        report_failure(fmt::format("write failed: {}", strerror(err)));
        close_early();
        return false;
      case proxy::UpstreamRequest::Send::kDone:
        break;
    }
    if (st_.up_piece) {
      down_->consume_body();
      st_.up_piece = false;
    }
  }
  return true;
}

}  // namespace sluice::server
