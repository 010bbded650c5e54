// An HTTP/2 stream's Downstream: the request head rebuilt for the exchange, the body from
// DATA with its flow-control window reopened only as the exchange consumes, and the response
// queued as pieces that nghttp2 copies into DATA frames as the peer's windows allow.

#include "server/h2_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "common/strings.h"
#include "server/h2_session.h"
#include "server/real_ip.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// RFC 9113 8.2.2 fields never go out on HTTP/2 (nghttp2 refuses them coming in).
bool connection_specific(std::string_view name) {
  return http::iequals(name, "connection") || http::iequals(name, "keep-alive") ||
         http::iequals(name, "proxy-connection") || http::iequals(name, "transfer-encoding") ||
         http::iequals(name, "upgrade");
}

nghttp2_nv make_nv(std::string_view name, std::string_view value) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
          reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
          NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

H2Stream::H2Stream(H2Session& s, int32_t id, std::unique_ptr<H1Message> msg)
    : s_(s), id_(id), msg_(std::move(msg)) {}

H2Stream::~H2Stream() {
  abort();
  s_.worker().give_message(std::move(msg_));
}

void H2Stream::abort() {
  io::TimerQueue::cancel(send_timer_);
  out_.clear();  // the pieces lived in the exchange's buffers
  if (exchange_ && !done_) {
    done_ = true;
    msg_->exchange.abort();
  }
  closed_ = true;
}

void H2Stream::on_closed() {
  if (!head_done_) {
    head_done_ = true;  // never to complete: it no longer holds the header timeout
    started_ = true;    // and nothing starts for it
    s_.head_finished();
  }
  closed_ = true;
}

void H2Stream::on_header(std::string_view name, std::string_view value) {
  list_size_ += name.size() + value.size() + 32;
  if (list_size_ > s_.worker().settings().h2.max_header_list_size) {
    too_large_ = true;  // counted on, never stored: the answer is a 431
  }
  if (too_large_) {
    return;
  }
  if (name.starts_with(':')) {
    std::string* to = name == ":method"      ? &method_
                      : name == ":path"      ? &path_
                      : name == ":authority" ? &authority_
                      : name == ":scheme"    ? &scheme_
                                             : nullptr;
    if (to != nullptr) {
      to->assign(value);
    }
    return;
  }
  if (name == "cookie") {
    // RFC 9113 8.2.3: crumbs are joined into one field for an HTTP/1.1 hop.
    if (!cookie_.empty()) {
      cookie_ += "; ";
    }
    cookie_ += value;
    return;
  }
  if (name == "host" && !authority_.empty()) {
    return;  // RFC 9113 8.3.1: :authority wins over Host
  }
  if (name == "content-length") {
    has_length_ = true;
  }
  fields_.append(name).append(": ").append(value).append("\r\n");
}

void H2Stream::on_head_done(bool end) {
  if (!head_done_) {
    s_.head_finished();
  }
  head_done_ = true;
  remote_end_ = remote_end_ || end;
}

// The head as HTTP/1.1 would carry it, parsed by the same parser, so the exchange, the
// router and the plugins see one kind of request. A body of unknown length is marked chunked
// so the upstream hop frames it the way it frames any HTTP/1.1 body of unknown length; one
// that came whole with the head gets its length.
bool H2Stream::build_head() {
  head_.clear();
  head_.reserve(method_.size() + path_.size() + authority_.size() + fields_.size() +
                cookie_.size() + 64);
  head_.append(method_).append(" ").append(path_).append(" HTTP/1.1\r\n");
  if (!authority_.empty()) {
    head_.append("host: ").append(authority_).append("\r\n");
  }
  head_.append(fields_);
  if (!cookie_.empty()) {
    head_.append("cookie: ").append(cookie_).append("\r\n");
  }
  if (!has_length_) {
    size_t have = 0;
    for (const std::string& b : body_) {
      have += b.size();
    }
    if (!remote_end_) {
      head_.append("transfer-encoding: chunked\r\n");
    } else if (have > 0) {
      // The whole body came with the head (DATA with END_STREAM in the same read, as gRPC
      // clients send a unary call): its length is known, and without it the body were lost.
      head_.append("content-length: ").append(std::to_string(have)).append("\r\n");
    }
  }
  head_.append("\r\n");
  std::string().swap(fields_);
  std::string().swap(cookie_);
  h1::Limits limits = s_.worker().settings().limits;
  limits.max_header_bytes =
      std::max<size_t>(limits.max_header_bytes, s_.worker().settings().h2.max_header_list_size);
  h1::ParseResult r = h1::parse_request(head_, limits, &msg_->req);
  if (r.status != h1::ParseStatus::kComplete) {
    SLUICE_LOG(kInfo, "client {}: bad HTTP/2 request ({}): {}", s_.conn().peer_ip(), r.error_status,
               r.error);
    local_reply(r.status == h1::ParseStatus::kError ? r.error_status : 400);
    return false;
  }
  msg_->req.version_major = 2;
  return true;
}

void H2Stream::start() {
  started_ = true;
  metrics::ConnStats::inc(s_.worker().stats().requests);
  if (too_large_) {
    local_reply(431);
    return;
  }
  if (method_ == "CONNECT") {
    local_reply(405);  // no tunnels over HTTP/2 yet (RFC 8441 is not implemented)
    return;
  }
  if (!build_head()) {
    return;
  }
  const http::RequestHead& req = msg_->req;
  ClientConn& c = s_.conn();
  if (c.admin_request(req)) [[unlikely]] {
    local_reply(421);  // the Admin API is served over HTTP/1.1 only
    return;
  }
  if (!c.tls_client_ok(req)) [[unlikely]] {
    local_reply(400);
    return;
  }
  ClientInfo info = c.client_info();
  const Settings& st = s_.worker().settings();
  if (!st.real_ip.trusted.empty()) [[unlikely]] {
    router::IpAddr addr;
    if (find_real_ip(st.real_ip, info.addr, req, &addr, &msg_->real_ip)) {
      info.ip = msg_->real_ip;
      info.addr = addr;
    }
  }
  exchange_ = true;
  msg_->exchange.begin(*this, req, head_.size(), info);
}

void H2Stream::run() {
  if (!head_done_) {
    return;
  }
  if (!started_) {
    if (closed_) {
      return;  // reset before its exchange began
    }
    start();
  }
  if (!exchange_ || done_) {
    return;
  }
  while (true) {
    switch (msg_->exchange.step()) {
      case Exchange::Step::kProgress:
        continue;
      case Exchange::Step::kWait:
        return;
      case Exchange::Step::kDone:
        done_ = true;
        io::TimerQueue::cancel(send_timer_);
        if (remote_end_ && body_.empty()) {
          return;
        }
        drop_body();  // and a RST_STREAM(NO_ERROR) follows our END_STREAM (on_frame_send)
        return;
      case Exchange::Step::kClose:
        done_ = true;
        io::TimerQueue::cancel(send_timer_);
        if (!closed_) {
          s_.reset_stream(id_, NGHTTP2_INTERNAL_ERROR);
        }
        return;
    }
  }
}

void H2Stream::local_reply(int status) {
  done_ = true;
  local_body_ = fmt::format("{{\"error_msg\":\"{} {}\"}}\n", status, status_reason(status));
  char len[24];
  auto n = fmt::format_to_n(len, sizeof(len), "{}", local_body_.size()).size;
  std::vector<nghttp2_nv> nv;
  nv.push_back(make_nv("content-type", "application/json"));
  nv.push_back(make_nv("content-length", {len, n}));
  out_.push_back(local_body_);
  end_ = true;
  submit(status, nv, true);
  drop_body();
}

Downstream::Body H2Stream::read_body(std::string_view* piece) {
  if (!body_.empty()) {
    *piece = body_.front();
    lent_ = true;
    return Body::kData;
  }
  if (remote_end_) {
    return Body::kEnd;
  }
  return closed_ ? Body::kClosed : Body::kWait;
}

void H2Stream::consume_body() {
  if (!lent_ || body_.empty()) {
    return;
  }
  lent_ = false;
  size_t n = body_.front().size();
  body_.pop_front();
  // Reopens the stream's and the connection's windows by what the exchange passed on.
  nghttp2_session_consume(s_.ng(), id_, n);
}

bool H2Stream::body_done() const { return remote_end_ && body_.empty(); }

void H2Stream::on_data(const uint8_t* data, size_t len) {
  body_in_ += len;
  if (done_ || closed_) {
    nghttp2_session_consume(s_.ng(), id_, len);  // nobody will read it
    return;
  }
  // A new piece unless the last one may still grow (it is not the one lent out).
  if (body_.empty() || (lent_ && body_.size() == 1) || body_.back().size() >= 16384) {
    body_.emplace_back();
  }
  body_.back().append(reinterpret_cast<const char*>(data), len);
}

void H2Stream::drop_body() {
  size_t n = 0;
  for (const std::string& b : body_) {
    n += b.size();
  }
  body_.clear();
  lent_ = false;
  if (n > 0) {
    nghttp2_session_consume(s_.ng(), id_, n);
  }
}

void H2Stream::send_continue() {
  if (remote_end_ || !body_.empty() || submitted_) {
    return;
  }
  nghttp2_nv nv = make_nv(":status", "100");
  nghttp2_submit_headers(s_.ng(), NGHTTP2_FLAG_NONE, id_, nullptr, &nv, 1, nullptr);
}

void H2Stream::send_head(const ResponseStart& r) {
  const Settings& st = s_.worker().settings();
  // Names go out in lower case (RFC 9113 8.2.1); nghttp2 copies them at submit.
  size_t names = 0;
  for (auto span : {r.upstream_fields, r.fields}) {
    for (const http::Header& f : span) {
      names += f.name.size();
    }
  }
  std::string lower;
  lower.reserve(names);
  std::vector<nghttp2_nv> nv;
  nv.reserve(r.upstream_fields.size() + r.fields.size() + 3);
  bool own_server = false;
  size_t upstream_n = 0;
  for (int part = 0; part < 2; ++part) {
    for (const http::Header& f : part == 0 ? r.upstream_fields : r.fields) {
      if (connection_specific(f.name) || http::iequals(f.name, "content-length")) {
        continue;
      }
      if (part == 0 && !st.server_header.empty() && http::iequals(f.name, "server")) {
        continue;  // the gateway's token replaces the upstream's, as over HTTP/1.1
      }
      size_t at = lower.size();
      for (char ch : f.name) {
        lower.push_back(common::ascii_lower(ch));
      }
      std::string_view name(lower.data() + at, f.name.size());
      own_server = own_server || (part == 1 && name == "server");
      nv.push_back(make_nv(name, f.value));
    }
    upstream_n = part == 0 ? nv.size() : upstream_n;
  }
  std::string_view server = st.server_header;  // "Server: sluice/x.y.z\r\n"
  if (!own_server && server.size() > 10) {
    server = server.substr(8, server.size() - 10);
    // The gateway's token goes first on its own answers, after the upstream's fields else.
    nv.insert(r.gateway_made ? nv.begin() : nv.begin() + static_cast<ptrdiff_t>(upstream_n),
              make_nv("server", server));
  }
  char len[24];
  if (r.content_length >= 0 && r.status >= 200 && r.status != 204) {
    auto n = fmt::format_to_n(len, sizeof(len), "{}", r.content_length).size;
    nv.push_back(make_nv("content-length", {len, n}));
  }
  end_ = r.bodiless;
  submit(r.status, nv, !r.bodiless);
}

void H2Stream::submit(int status, const std::vector<nghttp2_nv>& fields, bool body) {
  char code[8];
  auto n = fmt::format_to_n(code, sizeof(code), "{}", status).size;
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size() + 1);
  nv.push_back(make_nv(":status", {code, n}));
  nv.insert(nv.end(), fields.begin(), fields.end());
  nghttp2_data_provider src;
  src.source.ptr = this;
  src.read_callback = &H2Session::read_data;
  submitted_ = true;
  eof_out_ = !body;
  int rv = nghttp2_submit_response(s_.ng(), id_, nv.data(), nv.size(), body ? &src : nullptr);
  if (rv != 0) {
    SLUICE_LOG(kInfo, "client {}: HTTP/2 response on stream {}: {}", s_.conn().peer_ip(), id_,
               nghttp2_strerror(rv));
    closed_ = true;
  }
}

void H2Stream::send_data(std::string_view data) {
  body_out_ += data.size();
  if (!data.empty()) {
    out_.push_back(data);
    resume();
  }
}

void H2Stream::send_end() {
  end_ = true;
  resume();
}

void H2Stream::send_trailers(std::span<const http::Header> fields) {
  trailers_.clear();
  for (const http::Header& f : fields) {
    if (connection_specific(f.name) || f.name.starts_with(':')) {
      continue;
    }
    std::string name(f.name);
    for (char& ch : name) {
      ch = common::ascii_lower(ch);
    }
    trailers_.push_back(std::move(name));
    trailers_.emplace_back(f.value);
  }
}

// The body is out: the trailers end the stream in a HEADERS frame of their own (RFC 9113
// 8.1), which nghttp2 lets a data source submit as it ends its DATA without END_STREAM.
bool H2Stream::submit_trailers(uint32_t* flags) {
  if (trailers_.empty()) {
    return false;
  }
  std::vector<nghttp2_nv> nv;
  nv.reserve(trailers_.size() / 2);
  for (size_t i = 0; i + 1 < trailers_.size(); i += 2) {
    nv.push_back(make_nv(trailers_[i], trailers_[i + 1]));
  }
  if (nghttp2_submit_trailer(s_.ng(), id_, nv.data(), nv.size()) != 0) {
    return false;
  }
  *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  return true;
}

void H2Stream::resume() {
  if (deferred_ && !closed_) {
    deferred_ = false;
    nghttp2_session_resume_data(s_.ng(), id_);
  }
}

ssize_t H2Stream::produce(uint8_t* buf, size_t len, uint32_t* flags) {
  if (closed_) {
    // Aborted (a send timeout, the connection closing) with its DATA still queued: the
    // stream is reset rather than ended as if its response were whole.
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
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
  if (out_.empty()) {
    if (end_) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      submit_trailers(flags);
      eof_out_ = true;
    }
    s_.mark_ready(this);  // its flush() can now say kDone
  }
  if (n == 0 && !eof_out_) {
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (eof_out_) {
    io::TimerQueue::cancel(send_timer_);
  } else {
    // Some progress: the send timeout starts over.
    s_.worker().loop().arm(send_timer_, s_.worker().settings().send_timeout_ms);
  }
  return static_cast<ssize_t>(n);
}

Downstream::Flush H2Stream::flush() {
  // Checked first: a stream nghttp2 closed right after our END_STREAM went out has sent its
  // response whole, and its exchange finishes as usual (its upstream connection is reused).
  if (out_.empty() && (!end_ || eof_out_)) {
    io::TimerQueue::cancel(send_timer_);
    return Flush::kDone;
  }
  if (closed_) {
    return Flush::kClosed;
  }
  if (!send_timer_.armed()) {
    s_.worker().loop().arm(send_timer_, s_.worker().settings().send_timeout_ms);
  }
  return Flush::kWait;
}

void H2Stream::wake() { s_.wake(this); }

void H2Stream::on_send_timeout(void* self) {
  auto* s = static_cast<H2Stream*>(self);
  s->s_.stream_timed_out(s);
}

}  // namespace sluice::server
