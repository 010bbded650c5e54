// The HTTP/1.1 codec as the exchange sees it (Downstream): the request body de-framed from
// the read buffer (lengths and chunks; pieces point into the buffer and are dropped once the
// exchange has sent them on), "100 Continue", and the response framed for this client: its
// length, chunks, or the close for an HTTP/1.0 client, with the keep-alive verdict.

#include "codec/h1/head_writer.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

void ClientConn::release_head() {
  if (head_held_) {
    in_.consume(head_len_);
    head_held_ = false;
  }
}

Downstream::Body ClientConn::read_body(std::string_view* piece) {
  while (!req_body_done_) {
    if (!in_.empty()) {
      if (req_body_ == http::BodyKind::kLength) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(req_left_, in_.size()));
        *piece = {in_.data(), n};
        body_consume_ = n;
        req_left_ -= n;
        req_body_done_ = req_left_ == 0;
        return Body::kData;
      }
      h1::ChunkedDecoder::Step st = msg_->req_chunked.step(in_.view());
      switch (st.status) {
        case h1::ChunkedDecoder::Status::kData:
          *piece = st.data;
          body_consume_ = st.consumed;
          return Body::kData;
        case h1::ChunkedDecoder::Status::kDone:
          request_in_ += st.consumed;
          in_.consume(st.consumed);
          req_body_done_ = true;
          continue;
        case h1::ChunkedDecoder::Status::kError:
          return Body::kBad;
        case h1::ChunkedDecoder::Status::kNeedMore:
          request_in_ += st.consumed;
          in_.consume(st.consumed);
          if (st.consumed > 0 && !in_.empty()) {
            continue;
          }
          break;
      }
    }
    if (client_eof_) {
      return Body::kClosed;
    }
    bool eof = false;
    if (read_client(&eof) == Step::kWait) {
      return Body::kWait;
    }
  }
  return Body::kEnd;
}

void ClientConn::consume_body() {
  request_in_ += body_consume_;
  in_.consume(body_consume_);
  body_consume_ = 0;
}

void ClientConn::send_continue() {
  if (!req_body_done_ && in_.empty()) {
    out_.add(kContinue);
  }
}

void ClientConn::send_head(const ResponseStart& r) {
  const Settings& st = w_.settings();
  if (r.close || !req_body_done_ || w_.draining()) {
    keep_alive_ = false;
  }
  chunks_out_ = false;
  if (!r.upgrade.empty()) {
    keep_alive_ = false;  // whatever follows is the tunnel's, never another request
  }
  if (!r.bodiless && r.content_length < 0) {
    if (client_http10_) {
      keep_alive_ = false;  // a 1.0 client learns the end from the close
    } else {
      chunks_out_ = true;
    }
  }
  // Closing with request bytes still unread: drain them first, or the kernel's reset could
  // destroy our answer before the client reads it.
  linger_after_ = !req_body_done_ || (r.gateway_made && r.close);
  // A plugin's Server field replaces the gateway's token.
  std::string_view server = st.server_header;
  for (const http::Header& f : r.fields) {
    if (http::iequals(f.name, "server")) {
      server = {};
    }
  }
  h1::ResponseHeadOut out;
  out.status = r.status;
  out.reason = r.reason.empty() ? status_reason(r.status) : r.reason;
  // The gateway's own answers carry its Server token first, the upstream's after their fields.
  (r.gateway_made ? out.first_lines : out.middle_lines) = server;
  out.upstream = r.upstream_fields;
  out.skip_name = st.server_header.empty() ? std::string_view() : "server";
  out.fields = r.fields;
  out.content_length = r.content_length;
  out.chunked = chunks_out_;
  out.connection = !keep_alive_     ? h1::ResponseHeadOut::Connection::kClose
                   : client_http10_ ? h1::ResponseHeadOut::Connection::kKeepAlive
                                    : h1::ResponseHeadOut::Connection::kNone;
  out.upgrade = r.upgrade;
  std::string& h = msg_->head;
  h1::write_response_head(&h, out);
  out_.clear();
  out_.add(h);
  body_out_ = 0;
}

void ClientConn::send_data(std::string_view data) {
  if (data.empty()) {
    return;  // an empty chunk would end the body
  }
  if (chunks_out_) {
    size_t hl = h1::format_chunk_size(data.size(), msg_->chunk_hdr);
    out_.add({msg_->chunk_hdr, hl});
    out_.add(data);
    out_.add(h1::kChunkEnd);
    body_out_ += hl + h1::kChunkEnd.size();
  } else {
    out_.add(data);
  }
  body_out_ += data.size();
}

void ClientConn::send_end() {
  if (chunks_out_) {
    out_.add(h1::kLastChunk);
    body_out_ += h1::kLastChunk.size();
  }
}

// The 101 went out: the connection's stream goes to the exchange's tunnel, with whatever the
// client sent past its request head (its first frames, if it did not wait for the answer).
proxy::TunnelEnd ClientConn::upgrade() {
  upgraded_ = true;
  keep_alive_ = false;
  if (in_.capacity() == 0) {
    w_.take_buffer(&in_);
  }
  return {transport_, &in_, w_.settings().max_read_buffer};
}

Downstream::Flush ClientConn::flush() {
  switch (flush_out()) {
    case Step::kWait:
      return Flush::kWait;
    case Step::kProgress:
      return Flush::kClosed;  // a write error closed the connection
    case Step::kDone:
      break;
  }
  io::TimerQueue::cancel(timer_);  // a send timeout armed while the client was slow is over
  return Flush::kDone;
}

}  // namespace sluice::server
