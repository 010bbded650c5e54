// The response half of an exchange: the upstream's head read and checked, header_filter, the
// head the client gets (the upstream's end-to-end fields, the gateway's, the plugins' edits),
// then the body streamed back piece by piece through body_filter, never copied.

#include "common/log.h"
#include "common/strings.h"
#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

Exchange::Step Exchange::read_response_head() {
  switch (up_->read_head(st_.up_method, &resp_)) {
    case proxy::UpstreamRequest::Head::kHead:
      break;
    case proxy::UpstreamRequest::Head::kWait:
      if (up_->received() != st_.received) {
        st_.received = up_->received();
        arm(st_.timeouts.read_ms);  // the timeout counts from the last bytes
      }
      return Step::kWait;
    case proxy::UpstreamRequest::Head::kBad:
      note_try(502);  // a broken head is not tried elsewhere (nginx: invalid_header is opt-in)
      upstream_failed(502, up_->error().data());
      return Step::kProgress;
    case proxy::UpstreamRequest::Head::kClosed:
      if (retry_idle("closed before the response head")) {
        return Step::kProgress;
      }
      st_.up_conf->report_failure(st_.node, health::Failure::kTcp);
      try_next_or_fail(502, "upstream closed before the response head");
      return Step::kProgress;
  }
  st_.up_conf->report_status(st_.node, resp_.status);
  tries_.header(resp_.status, w_.loop().now_ms());
  start_response();
  st_.phase = st_.switching ? Phase::kUpgrade : Phase::kStream;
  return Step::kProgress;
}

// The upstream's end-to-end fields, less those the gateway regenerates and those a plugin's
// edit names. The views point into the upstream's read buffer, which nothing moves before
// the head is written.
void Exchange::filter_upstream_fields(bool pass_length, const plugin::ResponseEdits* ed) {
  upstream_fields_.clear();
  const http::ConnectionTokens listed(resp_.headers, resp_.num_headers);
  for (size_t i = 0; i < resp_.num_headers; ++i) {
    const http::Header& hd = resp_.headers[i];
    if (http::is_hop_by_hop(hd.name) || (!listed.empty() && listed.contains(hd.name))) {
      continue;
    }
    if (http::iequals(hd.name, "content-length") && !pass_length) {
      continue;
    }
    if (ed != nullptr && ed->headers.drops(hd.name)) {
      continue;
    }
    upstream_fields_.push_back(hd);
  }
}

// The fields plugins added or set, less framing and hop-by-hop ones, which are the codec's.
void Exchange::add_edited_fields(const plugin::HeaderEdits& edits) {
  edits.for_each_added([this](std::string_view name, std::string_view value) {
    if (!http::is_hop_by_hop(name) && !http::iequals(name, "content-length")) {
      fields_.push_back({name, value});
    }
  });
}

void Exchange::start_response() {
  int status = resp_.status;
  const plugin::ResponseEdits* ed = nullptr;
  if (st_.plugins) {
    plugin_header_filter(status, &resp_);
    if (!pctx_.resp.empty() || pctx_.resp.content_length >= 0) {
      ed = &pctx_.resp;
      status = ed->status != 0 ? ed->status : status;
    }
  }
  bool body_allowed = st_.method != http::Method::kHead && status != 204 && status != 304 &&
                      (status < 100 || status >= 200);
  st_.body_allowed = body_allowed;
  // Content-Length: the upstream's length re-sent (kLength), kept as is (HEAD, 304), a
  // plugin's, or none with the codec framing the body (chunks, or the close for HTTP/1.0).
  bool pass_length = false;
  int64_t length =
      resp_.body_kind == http::BodyKind::kLength ? static_cast<int64_t>(resp_.content_length) : -1;
  if (ed != nullptr && ed->content_length >= 0) {
    length = ed->content_length;
  } else if (ed != nullptr && ed->body_changes && body_allowed) {
    length = -1;
  } else if (resp_.body_kind == http::BodyKind::kNone) {
    pass_length = st_.method == http::Method::kHead || status == 304;
    if (!pass_length && body_allowed) {
      // An empty body the client must be told the length of: the upstream's Content-Length: 0
      // (unframed, a kept-alive client would wait for the close), or the upstream was asked
      // HEAD for a client's GET.
      length = 0;
    }
  }
  if (status < 200 || status == 204) {
    length = -1;  // RFC 9110 8.6: no Content-Length on 1xx or 204 (a plugin's new status)
  }
  filter_upstream_fields(pass_length, ed);
  fields_.clear();
  if (resp_.status >= 500 || w_.settings().show_upstream_status) {
    // APISIX: tells an upstream's 5xx from the gateway's own, with every try's status (failed
    // tries noted theirs; a successful one's is needed only here). With
    // show_upstream_status_in_response_header, on every response.
    note_try(resp_.status);
    fields_.push_back({"X-APISIX-Upstream-Status", up_statuses_});
  }
  if (ed != nullptr) {
    add_edited_fields(ed->headers);
  }
  ResponseStart r;
  r.status = status;
  r.reason = status == resp_.status ? resp_.reason : std::string_view();
  r.upstream_fields = upstream_fields_;
  r.fields = fields_;
  r.content_length = length;
  // HEAD, 304 and a body the upstream did not send (204, a HEAD upstream) have no body to
  // frame; a plugin's replaced body is framed even then, unless the status forbids one.
  r.bodiless = !body_allowed || (resp_.body_kind == http::BodyKind::kNone && length < 0 &&
                                 !(ed != nullptr && ed->body_changes));
  r.close = st_.early;
  if (st_.grpc && resp_.body_kind == http::BodyKind::kNone) {
    // A trailers-only gRPC answer (grpc-status in the head, END_STREAM on it) stays one.
    r.bodiless = true;
    r.content_length = -1;
  }
  if (resp_.status == 101 && status == 101) {
    // The upstream switched (H1UpstreamRequest checked it was asked and named its protocol):
    // the client hears the same, and the tunnel begins once it has.
    r.upgrade = resp_.find("upgrade")->value;
    st_.switching = true;
    st_.websocket = http::iequals(r.upgrade, "websocket");
  }
  st_.status = status;
  down_->send_head(r);
  st_.response_started = true;
}

// Passes a piece of the upstream's body through body_filter to the downstream; false when a
// plugin dropped all of it.
bool Exchange::send_piece(std::string_view data) {
  if (st_.plugins) {
    data = plugin::run_body_filter(chains_, pctx_, data, false);
    if (data.empty()) {
      return false;
    }
    pctx_.bytes_out += data.size();
  }
  if (!st_.body_allowed) {
    return false;
  }
  down_->send_data(data);
  return true;
}

Exchange::Step Exchange::stream_response() {
  while (true) {
    if (st_.duplex && !st_.body_sent && !pump_duplex()) {
      return Step::kClose;
    }
    if (st_.piece) {
      if (Step step; !flushed(&step)) {
        if (step == Step::kWait) {
          io::TimerQueue::cancel(timer_);  // a slow client is the connection's send timeout
        }
        return step;
      }
      up_->consume();
      st_.piece = false;
      if (st_.end_sent) {
        return finish();
      }
    }
    std::string_view piece;
    switch (up_->read_body(&piece)) {
      case proxy::UpstreamRequest::Body::kData:
        st_.piece = true;  // written or dropped, it is consumed after the flush
        send_piece(piece);
        continue;
      case proxy::UpstreamRequest::Body::kWait:
        if (up_->received() != st_.received) {
          st_.received = up_->received();
        }
        arm(st_.timeouts.read_ms);
        return Step::kWait;
      case proxy::UpstreamRequest::Body::kEnd:
        break;
      case proxy::UpstreamRequest::Body::kCut:
        report_failure("closed mid-body");
        close_early();
        return Step::kClose;
      case proxy::UpstreamRequest::Body::kBad:
        report_failure("bad chunked framing in the response body");
        close_early();
        return Step::kClose;
    }
    // The end: what a plugin still has to say (a replaced body) goes before it.
    if (st_.plugins) {
      std::string_view tail = plugin::run_body_filter(chains_, pctx_, {}, true);
      if (!tail.empty() && st_.body_allowed) {
        pctx_.bytes_out += tail.size();
        down_->send_data(tail);
      }
    }
    down_->send_trailers(up_->trailers());
    down_->send_end();
    st_.end_sent = true;
    st_.piece = true;  // flush what is queued, then finish
  }
}

void Exchange::plugin_reply() {
  if (pctx_.reply_source == nullptr) {
    reply(pctx_.reply_status, pctx_.reply_body, false);
    return;
  }
  source_reply();
}

// A plugin's own response: its fields, then header_filter's edits, then the body from the
// plugin's source, one piece in flight at a time.
void Exchange::source_reply() {
  end_try(false);
  release_head();
  forget_plugin_wait();
  int status = pctx_.reply_status;
  plugin_header_filter(status, nullptr);
  const plugin::ResponseEdits& ed = pctx_.resp;
  status = ed.status != 0 ? ed.status : status;
  fields_.clear();
  if (!ed.headers.drops("date")) {
    fields_.push_back({"Date", w_.http_date()});
  }
  for (const http::Header& h : pctx_.reply_fields) {
    if (!ed.headers.drops(h.name)) {
      fields_.push_back(h);
    }
  }
  add_edited_fields(ed.headers);
  bool bodiless = status < 200 || status == 204 || status == 304;
  st_.body_allowed = !bodiless && st_.method != http::Method::kHead;
  int64_t length = pctx_.reply_length;
  if (ed.content_length >= 0) {
    length = ed.content_length;
  } else if (ed.body_changes) {
    length = -1;
  }
  ResponseStart r;
  r.status = status;
  r.fields = fields_;
  r.content_length = bodiless ? -1 : length;
  r.bodiless = !st_.body_allowed;
  st_.status = status;
  down_->send_head(r);
  st_.response_started = true;
  st_.phase = Phase::kSource;
  io::TimerQueue::cancel(timer_);  // a slow client is the connection's send timeout
}

Exchange::Step Exchange::stream_source() {
  while (true) {
    if (st_.piece) {
      if (Step step; !flushed(&step)) {
        return step;
      }
      st_.piece = false;
      if (st_.end_sent) {
        log_request();
        if (st_.plugins) {
          end_plugins();
        }
        snap_.reset();
        st_.phase = Phase::kDone;
        return Step::kDone;
      }
    }
    std::string_view piece;
    plugin::BodySource::Read rd = plugin::BodySource::Read::kEnd;
    if (st_.body_allowed) {  // HEAD and bodiless statuses read nothing
      rd = pctx_.reply_source->next(&piece);
    }
    if (rd == plugin::BodySource::Read::kError) {
      SLUICE_LOG(kError, "route {}: the plugin's response body could not be read whole",
                 pctx_.route_id);
      close_early();
      return Step::kClose;
    }
    if (rd == plugin::BodySource::Read::kData) {
      st_.piece = true;
      send_piece(piece);
      continue;
    }
    std::string_view tail = plugin::run_body_filter(chains_, pctx_, {}, true);
    if (!tail.empty() && st_.body_allowed) {
      pctx_.bytes_out += tail.size();
      down_->send_data(tail);
    }
    down_->send_end();
    st_.end_sent = true;
    st_.piece = true;
  }
}

}  // namespace sluice::server
