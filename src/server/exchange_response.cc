// The response half of an exchange: read and check the upstream's head, rebuild it for the
// client, and stream the body back with its framing regenerated, never copied.

#include <sys/socket.h>

#include <cerrno>

#include "common/log.h"
#include "common/strings.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

// Reads from the upstream into its buffer. kProgress with *eof set on FIN or reset.
ClientConn::Step ClientConn::read_upstream(bool* eof) {
  *eof = false;
  switch (up_->transport().read(up_->in(), w_.settings().max_read_buffer)) {
    case io::Transport::Read::kData:
      return Step::kProgress;
    case io::Transport::Read::kWait:
      return Step::kWait;
    case io::Transport::Read::kEof:
      break;
  }
  *eof = true;
  return Step::kProgress;
}

ClientConn::Step ClientConn::read_response_head() {
  while (true) {
    io::Buffer& b = up_->in();
    if (!b.empty()) {
      h1::ParseResult r =
          h1::parse_response(b.view(), w_.settings().limits, up_method_, &ex_->resp);
      if (r.status == h1::ParseStatus::kComplete) {
        if (ex_->resp.status >= 100 && ex_->resp.status < 200 && ex_->resp.status != 101) {
          b.consume(r.consumed);  // interim responses are the gateway's business, not relayed
          continue;
        }
        if (ex_->resp.status == 101) {
          note_try(502);
          upstream_failed(502, "protocol upgrade is not supported");
          return Step::kProgress;
        }
        up_conf_->report_status(node_, ex_->resp.status);
        build_response_head();
        b.consume(r.consumed);
        state_ = State::kSendResponse;
        return Step::kProgress;
      }
      if (r.status == h1::ParseStatus::kError) {
        note_try(502);  // a broken head is not tried elsewhere (nginx: invalid_header is opt-in)
        upstream_failed(502, r.error);
        return Step::kProgress;
      }
    }
    bool eof = false;
    Step s = read_upstream(&eof);
    if (eof) {
      if (can_retry_idle_failure()) {
        // A pooled connection the upstream had closed: one fresh try for an idempotent request.
        int node = node_;
        release_upstream(false);
        retried_idle_ = true;
        if (!take_or_connect(node, true)) {
          try_next_or_fail(502, "reconnect failed");
        }
        return Step::kProgress;
      }
      up_conf_->report_failure(node_, health::Failure::kTcp);
      try_next_or_fail(502, "upstream closed before the response head");
      return Step::kProgress;
    }
    if (s == Step::kWait) {
      return Step::kWait;
    }
    arm_timer(route_->timeouts.read_ms);
  }
}

void ClientConn::build_response_head() {
  resp_body_ = ex_->resp.body_kind;
  resp_left_ = ex_->resp.content_length;
  resp_done_ = resp_body_ == http::BodyKind::kNone ||
               (resp_body_ == http::BodyKind::kLength && resp_left_ == 0);
  ex_->resp_chunked.reset();
  last_chunk_sent_ = false;
  resp_chunk_out_ = false;
  if (!req_body_done_ || w_.draining()) {
    keep_alive_ = false;
  }
  int status = ex_->resp.status;
  const plugin::ResponseEdits* ed = nullptr;
  if (plugins_) {
    ex_->pctx.upstream_resp = &ex_->resp;
    plugin_header_filter(status);
    ex_->pctx.upstream_resp = nullptr;
    if (!ex_->pctx.resp.empty() || ex_->pctx.resp.content_length >= 0) {
      ed = &ex_->pctx.resp;
      status = ed->status != 0 ? ed->status : status;
    }
  }
  // Content-Length: the upstream's length re-sent (kLength), kept as is (HEAD, 304), a
  // plugin's, or none with the body re-framed as chunks (or by the close for HTTP/1.0).
  bool pass_length = false;
  int64_t length = resp_body_ == http::BodyKind::kLength ? static_cast<int64_t>(resp_left_) : -1;
  bool reframe =
      resp_body_ == http::BodyKind::kChunked || resp_body_ == http::BodyKind::kUntilClose;
  bool body_allowed = method_ != http::Method::kHead && status != 204 && status != 304 &&
                      (status < 100 || status >= 200);
  resp_body_allowed_ = body_allowed;
  if (ed != nullptr && ed->content_length >= 0) {
    length = ed->content_length;
    reframe = false;
  } else if (ed != nullptr && ed->body_changes && body_allowed) {
    length = -1;
    reframe = true;
  } else if (resp_body_ == http::BodyKind::kNone) {
    pass_length = method_ == http::Method::kHead || status == 304;
    if (!pass_length && up_method_ == http::Method::kHead && body_allowed) {
      length = 0;  // the upstream was asked HEAD for a client's GET: an empty body
    }
  }
  if (reframe) {
    if (client_http10_) {
      keep_alive_ = false;  // a 1.0 client learns the end from the close
    } else {
      resp_chunk_out_ = true;
    }
  }
  std::string& h = ex_->out_head;
  h.clear();
  h.append("HTTP/1.1 ");
  common::append_uint(h, static_cast<uint64_t>(status));
  h.push_back(' ');
  h.append(status == ex_->resp.status ? ex_->resp.reason : status_reason(status)).append("\r\n");
  append_upstream_headers(pass_length, ed);
  if (ex_->resp.status >= 500) {
    // APISIX: tells an upstream's 5xx from the gateway's own, with every try's status (failed
    // tries noted theirs; a successful one's is needed only here).
    note_try(ex_->resp.status);
    h.append("X-APISIX-Upstream-Status: ").append(ex_->up_statuses).append("\r\n");
  }
  if (ed != nullptr) {
    append_added_headers(ed->headers);
  }
  if (length >= 0) {
    h.append("Content-Length: ");
    common::append_uint(h, static_cast<uint64_t>(length));
    h.append("\r\n");
  } else if (resp_chunk_out_) {
    h.append("Transfer-Encoding: chunked\r\n");
  }
  if (!keep_alive_) {
    h.append("Connection: close\r\n");
  } else if (client_http10_) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
  out_.clear();
  out_.add(h);
  out_consume_ = 0;
  piece_ = false;
  response_started_ = true;
}

// The upstream's end-to-end fields, less those the gateway regenerates and those a plugin's
// edit names.
void ClientConn::append_upstream_headers(bool pass_length, const plugin::ResponseEdits* ed) {
  const Settings& st = w_.settings();
  std::string& h = ex_->out_head;
  const http::ConnectionTokens listed(ex_->resp.headers, ex_->resp.num_headers);
  for (size_t i = 0; i < ex_->resp.num_headers; ++i) {
    const http::Header& hd = ex_->resp.headers[i];
    if (http::is_hop_by_hop(hd.name) || (!listed.empty() && listed.contains(hd.name))) {
      continue;
    }
    if (http::iequals(hd.name, "content-length") && !pass_length) {
      continue;
    }
    if (ed != nullptr && ed->headers.drops(hd.name)) {
      continue;
    }
    if (!st.server_header.empty() && http::iequals(hd.name, "server")) {
      continue;
    }
    h.append(hd.name).append(": ").append(hd.value).append("\r\n");
  }
  h.append(st.server_header);
}

// The fields plugins added or set, less framing and hop-by-hop ones, which are the codec's.
void ClientConn::append_added_headers(const plugin::HeaderEdits& edits) {
  std::string& h = ex_->out_head;
  edits.for_each_added([&h](std::string_view name, std::string_view value) {
    if (!http::is_hop_by_hop(name) && !http::iequals(name, "content-length")) {
      h.append(name).append(": ").append(value).append("\r\n");
    }
  });
}

// Loads the next piece of response body into out_.
ClientConn::Step ClientConn::produce_response_piece() {
  io::Buffer& b = up_->in();
  while (!b.empty() && !resp_done_) {
    if (resp_body_ == http::BodyKind::kLength || resp_body_ == http::BodyKind::kUntilClose) {
      size_t n = b.size();
      if (resp_body_ == http::BodyKind::kLength) {
        n = static_cast<size_t>(std::min<uint64_t>(resp_left_, n));
        resp_left_ -= n;
        resp_done_ = resp_left_ == 0;
      }
      out_consume_ = n;
      if (add_response_data({b.data(), n})) {
        return Step::kProgress;
      }
      b.consume(n);  // a plugin dropped the piece: nothing to write
      out_consume_ = 0;
      continue;
    }
    h1::ChunkedDecoder::Step s = ex_->resp_chunked.step(b.view());
    switch (s.status) {
      case h1::ChunkedDecoder::Status::kData:
        out_consume_ = s.consumed;
        if (add_response_data(s.data)) {
          return Step::kProgress;
        }
        b.consume(s.consumed);  // a plugin dropped the piece: nothing to write
        out_consume_ = 0;
        break;
      case h1::ChunkedDecoder::Status::kDone:
        b.consume(s.consumed);
        resp_done_ = true;
        break;
      case h1::ChunkedDecoder::Status::kNeedMore:
        b.consume(s.consumed);
        if (s.consumed == 0) {
          return Step::kWait;
        }
        break;
      case h1::ChunkedDecoder::Status::kError:
        SLUICE_LOG(kError, "upstream {}: bad chunked framing", up_->key());
        close_now();
        return Step::kProgress;
    }
  }
  return resp_done_ ? Step::kDone : Step::kWait;
}

bool ClientConn::add_response_data(std::string_view data) {
  if (plugins_) {
    data = plugin::run_body_filter(ex_->chains, ex_->pctx, data, false);
    if (data.empty()) {
      return false;
    }
  }
  ex_->pctx.bytes_out += data.size();
  piece_ = true;
  queue_body(data);
  return true;
}

void ClientConn::queue_body(std::string_view data) {
  if (resp_chunk_out_) {
    size_t hl = h1::format_chunk_size(data.size(), ex_->chunk_hdr);
    out_.add({ex_->chunk_hdr, hl});
    out_.add(data);
    out_.add(h1::kChunkEnd);
  } else {
    out_.add(data);
  }
}

ClientConn::Step ClientConn::send_response() {
  while (true) {
    if (!piece_ && !resp_done_) {
      produce_response_piece();
      if (state_ != State::kSendResponse) {
        return Step::kProgress;
      }
    }
    if (resp_done_ && !last_chunk_sent_) {
      if (plugins_) {
        // The last piece: what a plugin still has to say (a replaced body) goes before the end.
        std::string_view tail = plugin::run_body_filter(ex_->chains, ex_->pctx, {}, true);
        if (!tail.empty() && resp_body_allowed_) {
          ex_->pctx.bytes_out += tail.size();
          queue_body(tail);
        }
      }
      if (resp_chunk_out_) {
        out_.add(h1::kLastChunk);
      }
      last_chunk_sent_ = true;
    }
    if (out_.empty()) {
      if (resp_done_) {
        finish_exchange();
        return Step::kProgress;
      }
      bool eof = false;
      Step s = read_upstream(&eof);
      if (eof) {
        if (resp_body_ == http::BodyKind::kUntilClose && !up_->transport().failed()) {
          resp_done_ = true;
          continue;
        }
        SLUICE_LOG(kError, "upstream {} closed mid-body", up_->key());
        close_now();
        return Step::kProgress;
      }
      if (s == Step::kWait) {
        arm_timer(route_->timeouts.read_ms);
        return Step::kWait;
      }
      continue;
    }
    if (Step s = flush_out(); s != Step::kDone) {
      return s;
    }
    up_->in().consume(out_consume_);
    out_consume_ = 0;
    piece_ = false;
  }
}

void ClientConn::finish_exchange() {
  if (plugins_) {
    ex_->pctx.upstream_end_ns = ex_->pctx.timed ? plugin::monotonic_ns() : 0;
    end_plugins();
  }
  bool reusable = ex_->resp.keep_alive && resp_body_ != http::BodyKind::kUntilClose &&
                  req_body_done_ && up_->in().empty();
  node_finished(true);
  release_upstream(reusable);
  snap_.reset();
  route_ = nullptr;
  if (!keep_alive_) {
    close_now();
    return;
  }
  next_request();
}

}  // namespace sluice::server
