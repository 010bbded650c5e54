#include "proxy/h2_upstream_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "common/log.h"
#include "common/strings.h"

namespace sluice::proxy {

namespace {

nghttp2_nv make_nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

// RFC 9113 8.2.2: fields that never go out on HTTP/2 (TE goes as "trailers", added below).
bool connection_specific(std::string_view name) {
  return http::iequals(name, "connection") || http::iequals(name, "keep-alive") ||
         http::iequals(name, "proxy-connection") || http::iequals(name, "transfer-encoding") ||
         http::iequals(name, "upgrade") || http::iequals(name, "te") ||
         http::iequals(name, "host") || http::iequals(name, "content-length");
}

}  // namespace

H2UpstreamRequest::~H2UpstreamRequest() { release(false); }

void H2UpstreamRequest::prepare(const RequestStart& r) {
  method_.assign(r.method);
  path_.assign(r.target);
  fields_.clear();
  for (const http::Header& f : r.fields) {
    if (connection_specific(f.name)) {
      continue;
    }
    std::string name(f.name);
    for (char& ch : name) {
      ch = common::ascii_lower(ch);
    }
    fields_.emplace_back(std::move(name), std::string(f.value));
  }
  body_kind_ = r.body;
  length_ = r.length;
}

void H2UpstreamRequest::reset_try() {
  stream_id_ = -1;
  written_ = false;
  error_.clear();
  out_.clear();
  out_off_ = 0;
  out_end_ = eof_sent_ = deferred_ = false;
  status_ = 0;
  head_done_ = head_end_ = remote_end_ = closed_ = eof_ = false;
  close_code_ = 0;
  head_fields_.clear();
  trailer_fields_.clear();
  trailer_views_.clear();
  body_.clear();
  lent_ = false;
}

bool H2UpstreamRequest::submit(const Target& t, int* err) {
  char len[24];
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields_.size() + 7);
  nv.push_back(make_nv(":method", method_));
  nv.push_back(make_nv(":scheme", t.tls != nullptr ? "https" : "http"));
  nv.push_back(make_nv(":authority", t.host.empty() ? std::string_view(*t.key) : t.host));
  nv.push_back(make_nv(":path", path_));
  for (const auto& [name, value] : fields_) {
    nv.push_back(make_nv(name, value));
  }
  nv.push_back(make_nv("te", "trailers"));  // gRPC servers expect it (RFC 9113 8.2.2)
  bool body =
      body_kind_ == RequestStart::Body::kLength || body_kind_ == RequestStart::Body::kChunked;
  if (body_kind_ == RequestStart::Body::kLength || body_kind_ == RequestStart::Body::kEmpty) {
    auto end = std::to_chars(len, len + sizeof(len), body ? length_ : 0).ptr;
    nv.push_back(make_nv("content-length", {len, static_cast<size_t>(end - len)}));
  }
  nghttp2_data_provider src;
  src.source.ptr = static_cast<H2StreamSink*>(this);
  src.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t n, uint32_t* flags,
                         nghttp2_data_source* s, void*) -> ssize_t {
    return static_cast<H2StreamSink*>(s->ptr)->produce(buf, n, flags);
  };
  eof_sent_ = !body;
  stream_id_ = nghttp2_submit_request(conn_->h2->ng(), nullptr, nv.data(), nv.size(),
                                      body ? &src : nullptr, static_cast<H2StreamSink*>(this));
  if (stream_id_ < 0) {
    error_ = fmt::format("HTTP/2 request not submitted: {}", nghttp2_strerror(stream_id_));
    *err = EPROTO;
    return false;
  }
  return true;
}

void H2UpstreamRequest::add_body(std::string_view piece, bool) {
  if (!piece.empty()) {
    out_.push_back(piece);
  }
  if (deferred_) {
    deferred_ = false;
    nghttp2_session_resume_data(conn_->h2->ng(), stream_id_);
  }
}

void H2UpstreamRequest::add_body_end(bool chunked) {
  out_end_ = true;
  add_body({}, chunked);
}

ssize_t H2UpstreamRequest::produce(uint8_t* buf, size_t len, uint32_t* flags) {
  size_t n = 0;
  while (n < len && !out_.empty()) {
    std::string_view front = out_.front().substr(out_off_);
    size_t take = std::min(len - n, front.size());
    std::memcpy(buf + n, front.data(), take);
    n += take;
    out_off_ += take;
    if (out_off_ == out_.front().size()) {
      out_.pop_front();
      out_off_ = 0;
    }
  }
  if (out_.empty() && out_end_) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    eof_sent_ = true;
    return static_cast<ssize_t>(n);
  }
  if (n == 0) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return static_cast<ssize_t>(n);
}

bool H2UpstreamRequest::pump_in() {
  if (conn_->h2->ended()) {
    eof_ = true;  // another stream's read saw the connection end
  }
  pumping_ = true;
  while (!eof_) {
    size_t before = conn_->in().size();
    switch (conn_->stream().read(conn_->in(), env_.max_read_buffer)) {
      case io::Transport::Read::kData:
        received_ += conn_->in().size() - before;
        if (!conn_->h2->feed(conn_->in().view())) {
          error_ = "HTTP/2 protocol error from the upstream";
          eof_ = true;
        }
        conn_->in().consume(conn_->in().size());
        continue;
      case io::Transport::Read::kEof:
        eof_ = true;
        conn_->h2->set_ended();
        break;
      case io::Transport::Read::kWait:
        pumping_ = false;
        return true;
    }
  }
  pumping_ = false;
  return false;
}

// Frames for this stream were taken by another stream's read: this one's owner is told on
// the loop's next round (never from inside nghttp2, nor under the reader's own step).
void H2UpstreamRequest::wake_soon() {
  if (!pumping_ && owner_ != nullptr) {
    env_.loop->arm(wake_timer_, 0);
  }
}

void H2UpstreamRequest::on_wake(void* self) {
  auto* r = static_cast<H2UpstreamRequest*>(self);
  if (r->owner_ != nullptr) {
    r->owner_->on_upstream_event();
  }
}

bool H2UpstreamRequest::pump_out(int* err) {
  return conn_->h2->flush(*conn_, err) != io::Outbox::Result::kError;
}

UpstreamRequest::Send H2UpstreamRequest::send(int* err) {
  io::SocketTransport& t = conn_->socket();
  if (!conn_->connected) {
    if (!t.writable() && !t.hangup()) {
      return Send::kWait;
    }
    int e = io::socket_error(conn_->fd());
    if (e != 0) {
      *err = e;
      return Send::kConnectFailed;
    }
    conn_->connected = true;
    t.set_writable(true);
  }
  bool handshaking = !conn_->ready();
  if (!handshaking) {
    pump_in();
  }
  io::Outbox::Result r = conn_->h2->flush(*conn_, err);
  if (handshaking && conn_->ready() && !alpn_ok()) {
    return Send::kConnectFailed;
  }
  switch (r) {
    case io::Outbox::Result::kError:
      if (handshaking) {
        const std::string& why = conn_->tls()->error();
        error_ = "TLS handshake failed: ";
        error_.append(why.empty() ? std::strerror(*err) : why);
        return Send::kConnectFailed;
      }
      return Send::kWriteFailed;
    case io::Outbox::Result::kBlocked:
    case io::Outbox::Result::kQueued:
      written_ = written_ || conn_->ready();
      return Send::kWait;
    case io::Outbox::Result::kDone:
      break;
  }
  written_ = true;
  if (closed_ && remote_end_) {
    out_.clear();  // the upstream answered whole before taking all of the body
    out_off_ = 0;
    return Send::kDone;
  }
  if (gone()) {
    *err = eof_ ? EPIPE : ECONNRESET;
    return Send::kWriteFailed;
  }
  return out_.empty() ? Send::kDone : Send::kWait;
}

bool H2UpstreamRequest::answered_early() {
  if (!conn_ || !conn_->ready()) {
    return false;
  }
  pump_in();
  // Only an answer already whole (or a stream that ended) cuts the request short: a gRPC
  // server sends its head while the client still streams, and that is no early answer.
  return closed_ || eof_;
}

void H2UpstreamRequest::on_field(std::string_view name, std::string_view value) {
  if (head_done_) {
    trailer_fields_.emplace_back(name, value);
    return;
  }
  if (name == ":status") {
    std::from_chars(value.data(), value.data() + value.size(), status_);
    return;
  }
  if (!name.starts_with(':')) {
    head_fields_.emplace_back(name, value);
  }
}

void H2UpstreamRequest::on_fields_done(bool end) {
  if (!head_done_) {
    if (status_ >= 100 && status_ < 200) {
      head_fields_.clear();  // an interim answer is not relayed
      status_ = 0;
      return;
    }
    head_done_ = true;
    head_end_ = end;
  }
  remote_end_ = remote_end_ || end;
  wake_soon();
}

void H2UpstreamRequest::on_data(const uint8_t* data, size_t len) {
  if (body_.empty() || (lent_ && body_.size() == 1) || body_.back().size() >= 16384) {
    body_.emplace_back();
  }
  body_.back().append(reinterpret_cast<const char*>(data), len);
  wake_soon();
}

void H2UpstreamRequest::on_close(uint32_t code) {
  closed_ = true;
  close_code_ = code;
  if (code != NGHTTP2_NO_ERROR && !remote_end_) {
    error_ = fmt::format("the upstream reset the HTTP/2 stream ({})", nghttp2_http2_strerror(code));
  }
  wake_soon();
}

UpstreamRequest::Head H2UpstreamRequest::read_head(http::Method, http::ResponseHead* head) {
  int err = 0;
  pump_in();
  pump_out(&err);
  if (!head_done_) {
    return gone() || closed_ ? Head::kClosed : Head::kWait;
  }
  if (head_fields_.size() > http::kMaxHeaders) {
    error_ = "too many fields in the upstream's HTTP/2 response head";
    return Head::kBad;
  }
  head->status = status_;
  head->reason = {};
  head->version_minor = 1;
  head->num_headers = head_fields_.size();
  head->body_kind = head_end_ ? http::BodyKind::kNone : http::BodyKind::kUntilClose;
  head->content_length = 0;
  head->keep_alive = true;
  for (size_t i = 0; i < head_fields_.size(); ++i) {
    head->headers[i] = {head_fields_[i].first, head_fields_[i].second};
    if (!head_end_ && head_fields_[i].first == "content-length") {
      uint64_t n = 0;
      const std::string& v = head_fields_[i].second;
      if (std::from_chars(v.data(), v.data() + v.size(), n).ec == std::errc()) {
        head->body_kind = http::BodyKind::kLength;
        head->content_length = n;
      }
    }
  }
  return Head::kHead;
}

UpstreamRequest::Body H2UpstreamRequest::read_body(std::string_view* piece) {
  int err = 0;
  if (body_.empty() && !remote_end_) {
    pump_in();
    pump_out(&err);
  }
  if (!body_.empty()) {
    *piece = body_.front();
    lent_ = true;
    return Body::kData;
  }
  if (remote_end_) {
    trailer_views_.clear();
    for (const auto& [name, value] : trailer_fields_) {
      trailer_views_.push_back({name, value});
    }
    return Body::kEnd;
  }
  return gone() || closed_ ? Body::kCut : Body::kWait;
}

void H2UpstreamRequest::consume() {
  if (!lent_ || body_.empty()) {
    return;
  }
  lent_ = false;
  size_t n = body_.front().size();
  body_.pop_front();
  // The window reopens by what went on to the client; the WINDOW_UPDATE goes out now.
  nghttp2_session_consume(conn_->h2->ng(), stream_id_, n);
  int err = 0;
  pump_out(&err);
}

bool H2UpstreamRequest::reusable() const {
  return conn_ && remote_end_ && closed_ && close_code_ == NGHTTP2_NO_ERROR && !eof_ &&
         conn_->h2->usable();
}

}  // namespace sluice::proxy
