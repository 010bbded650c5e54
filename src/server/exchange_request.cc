// The request half of an exchange: route, pick a node, connect or reuse a pooled connection,
// send the rebuilt head and stream the body upstream with backpressure.

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/strings.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// Headers the gateway sets itself or regenerates.
bool replaced_upstream(std::string_view n) {
  switch (n.size()) {
    case 4:
      return http::iequals(n, "host");
    case 6:
      return http::iequals(n, "expect");
    case 9:
      return http::iequals(n, "x-real-ip");
    case 14:
      return http::iequals(n, "content-length");
    case 15:
      return http::iequals(n, "x-forwarded-for");
    case 16:
      return http::iequals(n, "x-forwarded-host") || http::iequals(n, "x-forwarded-port");
    case 17:
      return http::iequals(n, "x-forwarded-proto");
    default:
      return false;
  }
}

std::string_view strip_port(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t end = host.find(']');
    return end == std::string_view::npos ? host : host.substr(0, end + 1);
  }
  size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

}  // namespace

void ClientConn::start_exchange() {
  metrics::ConnStats::inc(w_.stats().requests);
  if (!writing_) {
    writing_ = true;
    metrics::ConnStats::inc(w_.stats().writing);
    w_.refresh_reading();
  }
  method_ = ex_->req.method;
  up_method_ = method_;
  client_http10_ = ex_->req.version_minor == 0;
  keep_alive_ = ex_->req.keep_alive && !w_.draining();
  req_body_ = ex_->req.body_kind;
  req_left_ = ex_->req.content_length;
  req_body_done_ = req_body_ == http::BodyKind::kNone;
  ex_->req_chunked.reset();
  response_started_ = false;
  retried_idle_ = false;
  tried_ = 0;
  req_written_ = false;
  body_taken_ = false;
  ex_->up_statuses.clear();
  client_ip_ = peer_ip_;
  client_addr_ = peer_addr_;
  if (!w_.settings().real_ip.trusted.empty()) [[unlikely]] {
    if (find_real_ip(w_.settings().real_ip, peer_addr_, ex_->req, &client_addr_, &ex_->real_ip)) {
      client_ip_ = ex_->real_ip;
    }
  }
  // The one branch the Admin API costs a proxied request (a prefix compare when enabled).
  if (admin_port_ || (w_.settings().admin && is_admin_path(ex_->req.path))) [[unlikely]] {
    start_admin();
    return;
  }

  snap_ = w_.snapshot();
  const router::RouteSpec* spec = nullptr;
  router::MatchContext mctx{&ex_->req, client_ip_, client_addr_, local_port_};
  if (snap_) {
    spec = snap_->table.match(mctx);
  }
  route_ = spec != nullptr ? &snap_->routes[spec->index] : nullptr;
  // One test when no plugin is configured anywhere.
  if (snap_ && (snap_->global || (route_ != nullptr && route_->chain))) {
    begin_plugins(mctx);
    if (!run_request_plugins()) {
      return;
    }
  }
  route_request();
}

void ClientConn::route_request() {
  if (route_ == nullptr) {
    in_.consume(head_len_);
    local_reply(404, "{\"error_msg\":\"404 Route Not Found\"}\n", false);
    return;
  }
  up_conf_ = route_->upstream;
  int status = 0;
  std::string_view msg;
  if (route_->target == snapshot::RouteTarget::kServiceMissing) {
    status = 404;
    msg = "{\"error_msg\":\"404 Route Not Found\"}\n";
  } else if (route_->target == snapshot::RouteTarget::kNoUpstream) {
    status = 503;
    msg = "{\"error_msg\":\"missing upstream configuration in Route or Service\"}\n";
  } else if (up_conf_->nodes.empty()) {
    status = 503;
    msg = "{\"error_msg\":\"no valid upstream node\"}\n";
  } else if (w_.settings().client_max_body_size != 0 && req_body_ == http::BodyKind::kLength &&
             req_left_ > w_.settings().client_max_body_size) {
    status = 413;
  }
  if (status != 0) {
    in_.consume(head_len_);
    local_reply(status, msg, false);
    return;
  }
  lb_hash_ = balancer_hash();
  build_upstream_head();
  in_.consume(head_len_);  // ex_->req's views are dead from here on
  if (plugins_) {
    ex_->pctx.req = nullptr;
    ex_->pctx.match.req = nullptr;
  }
  if (ex_->req.expect_continue && !req_body_done_ && in_.empty()) {
    out_.add(kContinue);
  }
  tries_left_ = up_conf_->retries;
  first_try_ms_ = w_.loop().now_ms();
  if (!connect_next()) {
    upstream_failed(502, "no node reachable");
  }
}

void ClientConn::build_upstream_head() {
  const plugin::RequestEdits* ed = nullptr;
  if (plugins_ && !ex_->pctx.upstream.empty()) [[unlikely]] {
    ed = &ex_->pctx.upstream;
  }
  std::string& h = ex_->up_head;
  h.clear();
  if (ed != nullptr && !ed->method.empty()) {
    h.append(ed->method);
    up_method_ = http::parse_method(ed->method);
  } else {
    h.append(ex_->req.method_text);
  }
  h.push_back(' ');
  if (ed != nullptr && !ed->uri.empty()) {
    h.append(ed->uri);
  } else if (!ex_->req.authority.empty()) {
    h.append(ex_->req.path.empty() ? std::string_view("/") : ex_->req.path);
    if (!ex_->req.query.empty()) {
      h.append("?").append(ex_->req.query);
    }
  } else {
    h.append(ex_->req.target);
  }
  h.append(" HTTP/1.1\r\n");
  // The Host line is inserted here per node by set_host_line().
  host_offset_ = h.size();
  host_len_ = 0;
  ex_->xff.clear();
  const http::ConnectionTokens listed(ex_->req.headers, ex_->req.num_headers);
  for (size_t i = 0; i < ex_->req.num_headers; ++i) {
    const http::Header& hd = ex_->req.headers[i];
    if (http::iequals(hd.name, "x-forwarded-for")) {
      if (!ex_->xff.empty()) {
        ex_->xff.append(", ");
      }
      ex_->xff.append(hd.value);
      continue;
    }
    if (http::is_hop_by_hop(hd.name) || replaced_upstream(hd.name) ||
        (!listed.empty() && listed.contains(hd.name))) {
      continue;
    }
    if (ed != nullptr && ed->headers.drops(hd.name)) {
      continue;
    }
    h.append(hd.name).append(": ").append(hd.value).append("\r\n");
  }
  append_forwarding_headers(ed);
  if (ed != nullptr) {
    // Framing and hop-by-hop fields are the codec's: an edit cannot forge them.
    ed->headers.for_each_added([&h](std::string_view name, std::string_view value) {
      if (!http::is_hop_by_hop(name) && !http::iequals(name, "content-length") &&
          !http::iequals(name, "host") && !http::iequals(name, "expect")) {
        h.append(name).append(": ").append(value).append("\r\n");
      }
    });
  }
  if (req_body_ == http::BodyKind::kLength) {
    h.append("Content-Length: ");
    common::append_uint(h, req_left_);
    h.append("\r\n");
  } else if (req_body_ == http::BodyKind::kChunked) {
    h.append("Transfer-Encoding: chunked\r\n");
  } else if (ex_->req.find("content-length") != nullptr) {
    h.append("Content-Length: 0\r\n");  // an explicit empty body (POST) stays explicit
  }
  h.append("\r\n");
  ex_->client_host.assign(ed != nullptr && !ed->host.empty() ? std::string_view(ed->host)
                                                             : ex_->req.host);
}

// X-Real-IP and X-Forwarded-*, each unless a plugin's edit names it (its value then comes with
// the edits).
void ClientConn::append_forwarding_headers(const plugin::RequestEdits* ed) {
  std::string& h = ex_->up_head;
  auto ours = [ed](std::string_view name) { return ed == nullptr || !ed->headers.drops(name); };
  if (ours("x-real-ip")) {
    h.append("X-Real-IP: ").append(client_ip_).append("\r\n");
  }
  if (ours("x-forwarded-for")) {
    h.append("X-Forwarded-For: ");
    if (!ex_->xff.empty()) {
      h.append(ex_->xff).append(", ");
    }
    h.append(client_ip_).append("\r\n");
  }
  if (ours("x-forwarded-proto")) {
    h.append("X-Forwarded-Proto: http\r\n");
  }
  // An HTTP/1.0 request may come without a Host.
  if (!ex_->req.host.empty() && ours("x-forwarded-host")) {
    h.append("X-Forwarded-Host: ").append(strip_port(ex_->req.host)).append("\r\n");
  }
  if (ours("x-forwarded-port")) {
    h.append("X-Forwarded-Port: ");
    common::append_uint(h, local_port_);
    h.append("\r\n");
  }
}

// Inserts the Host line for node `node` (pass_host decides which).
void ClientConn::set_host_line(int node) {
  std::string_view host;
  // A plugin's host edit (proxy-rewrite's `host`) wins over pass_host: it is in client_host.
  bool edited = plugins_ && !ex_->pctx.upstream.host.empty();
  switch (edited ? upstream::PassHost::kPass : up_conf_->pass_host) {
    case upstream::PassHost::kPass:
      // An HTTP/1.0 client may send no Host; HTTP/1.1 upstreams require one.
      host = ex_->client_host.empty() ? std::string_view(up_conf_->nodes[node].host_header)
                                      : std::string_view(ex_->client_host);
      break;
    case upstream::PassHost::kNode:
      host = up_conf_->nodes[node].host_header;
      break;
    case upstream::PassHost::kRewrite:
      host = up_conf_->upstream_host;
      break;
  }
  if (host_len_ > 0) {
    ex_->up_head.erase(host_offset_, host_len_);
  }
  host_len_ = 0;
  if (!host.empty()) {
    // Three inserts in place: no temporary string on the request path.
    ex_->up_head.insert(host_offset_, "\r\n");
    ex_->up_head.insert(host_offset_, host);
    ex_->up_head.insert(host_offset_, "Host: ");
    host_len_ = host.size() + 8;
  }
}

bool ClientConn::connect_next() {
  while (true) {
    int node = pick_node();
    if (node < 0) {
      return false;
    }
    if (node < 64) {
      tried_ |= uint64_t{1} << node;
    }
    if (take_or_connect(node, false)) {
      return true;
    }
    note_try(502);
    if (!retry_allowed()) {
      return false;
    }
  }
}

void ClientConn::note_try(int status) {
  std::string& s = ex_->up_statuses;
  if (!s.empty()) {
    s.append(", ");
  }
  common::append_uint(s, static_cast<uint64_t>(status));
}

bool ClientConn::can_send_again() const {
  return !response_started_ && !body_taken_ && (!req_written_ || http::is_idempotent(up_method_));
}

// Spends one of the tries left, if the request may be sent again and retry_timeout allows.
bool ClientConn::retry_allowed() {
  if (tries_left_ <= 0 || !can_send_again()) {
    return false;
  }
  if (up_conf_->retry_timeout_ms != 0 &&
      w_.loop().now_ms() - first_try_ms_ >= up_conf_->retry_timeout_ms) {
    return false;
  }
  --tries_left_;
  return true;
}

void ClientConn::try_next_or_fail(int status, const char* why) {
  SLUICE_LOG(kWarn, "upstream {}: {}", up_ ? up_->key() : std::string("-"), why);
  note_try(status);
  release_upstream(false);
  if (retry_allowed() && connect_next()) {
    return;
  }
  upstream_failed(status, why);
}

bool ClientConn::take_or_connect(int node, bool fresh) {
  const upstream::Node& n = up_conf_->nodes[node];
  node_ = node;
  node_started(node);
  if (plugins_ && ex_->pctx.timed) {
    ex_->pctx.upstream_ip = n.ip;
    if (ex_->pctx.upstream_start_ns == 0) {
      ex_->pctx.upstream_start_ns = plugin::monotonic_ns();
    }
  }
  set_host_line(node);
  ex_->up_out.clear();
  up_out_consume_ = 0;
  ex_->up_out.add(ex_->up_head);
  up_piece_ = false;
  if (!fresh) {
    up_ = w_.pool().take(n.addr_key);
  }
  if (up_) {
    up_->owner = this;
    up_reused_ = true;
    state_ = State::kSendRequest;
    arm_timer(route_->timeouts.send_ms);
    return true;
  }
  int fd = io::connect_nonblocking(n.addr);
  if (fd < 0) {
    SLUICE_LOG(kError, "connect to {} failed: {}", n.addr_key, strerror(-fd));
    up_conf_->report_failure(node, health::Failure::kTcp);
    return false;
  }
  up_ = std::make_unique<proxy::UpstreamConn>(w_.loop(), fd, n.addr_key);
  up_->in().reserve_total(w_.settings().read_buffer);
  up_->owner = this;
  up_reused_ = false;
  w_.loop().add(fd, up_.get());
  state_ = State::kConnect;
  arm_timer(route_->timeouts.connect_ms);
  return true;
}

ClientConn::Step ClientConn::send_request() {
  if (state_ == State::kConnect) {
    io::SocketTransport& t = up_->transport();
    if (!t.writable() && !t.hangup()) {
      return Step::kWait;
    }
    int err = io::socket_error(up_->fd());
    if (err != 0) {
      SLUICE_LOG(kError, "connect to {} failed: {}", up_->key(), strerror(err));
      up_conf_->report_failure(node_, health::Failure::kTcp);
      try_next_or_fail(502, "connect failed");
      return Step::kProgress;
    }
    up_->connected = true;
    t.set_writable(true);
    state_ = State::kSendRequest;
    arm_timer(route_->timeouts.send_ms);
  }
  while (true) {
    if (!up_piece_ && !req_body_done_) {
      Step s = produce_request_piece();
      if (state_ != State::kSendRequest) {
        return Step::kProgress;
      }
      if (s == Step::kWait && ex_->up_out.empty()) {
        arm_timer(w_.settings().body_timeout_ms);
        return Step::kWait;
      }
    }
    if (ex_->up_out.empty()) {
      if (req_body_done_) {
        ++up_->requests;
        state_ = State::kReadResponse;
        arm_timer(route_->timeouts.read_ms);
        return Step::kProgress;
      }
      continue;
    }
    if (!up_->transport().writable()) {
      return Step::kWait;
    }
    int err = 0;
    io::Outbox::Result r = up_->transport().write(ex_->up_out, &err);
    if (r == io::Outbox::Result::kQueued) {
      return Step::kWait;
    }
    if (r == io::Outbox::Result::kBlocked) {
      req_written_ = true;  // perhaps only part of it
      arm_timer(route_->timeouts.send_ms);
      return Step::kWait;
    }
    if (r == io::Outbox::Result::kError) {
      return upstream_write_failed(err);
    }
    req_written_ = true;
    in_.consume(up_out_consume_);
    up_out_consume_ = 0;
    up_piece_ = false;
  }
}

ClientConn::Step ClientConn::upstream_write_failed(int err) {
  SLUICE_LOG(kInfo, "write to upstream {} failed: {}", up_->key(), strerror(err));
  if (can_retry_idle_failure()) {
    int node = node_;
    release_upstream(false);
    retried_idle_ = true;
    if (!take_or_connect(node, true)) {
      try_next_or_fail(502, "reconnect failed");
    }
    return Step::kProgress;
  }
  if (!up_->in().empty() || up_->transport().readable()) {
    // The upstream answered early (e.g. 413) and closed: relay that answer.
    keep_alive_ = false;
    req_body_done_ = true;
    ex_->up_out.clear();
    state_ = State::kReadResponse;
    return Step::kProgress;
  }
  try_next_or_fail(502, "upstream write failed");
  return Step::kProgress;
}

// Loads the next piece of request body into ex_->up_out, reading from the client as needed.
ClientConn::Step ClientConn::produce_request_piece() {
  while (true) {
    if (!in_.empty()) {
      body_taken_ = true;  // from here on the body cannot be sent to another node
      if (req_body_ == http::BodyKind::kLength) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(req_left_, in_.size()));
        ex_->up_out.add({in_.data(), n});
        up_out_consume_ = n;
        ex_->pctx.bytes_in += n;
        req_left_ -= n;
        req_body_done_ = req_left_ == 0;
        up_piece_ = true;
        return Step::kProgress;
      }
      h1::ChunkedDecoder::Step st = ex_->req_chunked.step(in_.view());
      switch (st.status) {
        case h1::ChunkedDecoder::Status::kData: {
          size_t hl = h1::format_chunk_size(st.data.size(), ex_->up_chunk_hdr);
          ex_->up_out.add({ex_->up_chunk_hdr, hl});
          ex_->up_out.add(st.data);
          ex_->up_out.add(h1::kChunkEnd);
          up_out_consume_ = st.consumed;
          ex_->pctx.bytes_in += st.consumed;
          up_piece_ = true;
          return Step::kProgress;
        }
        case h1::ChunkedDecoder::Status::kDone:
          in_.consume(st.consumed);
          ex_->up_out.add(h1::kLastChunk);
          req_body_done_ = true;
          up_piece_ = true;
          return Step::kProgress;
        case h1::ChunkedDecoder::Status::kError:
          SLUICE_LOG(kInfo, "client {}: bad chunked request body", peer_ip_);
          local_reply(400, {}, true);
          return Step::kProgress;
        case h1::ChunkedDecoder::Status::kNeedMore:
          in_.consume(st.consumed);
          if (st.consumed > 0 && !in_.empty()) {
            continue;
          }
          break;
      }
    }
    if (client_eof_) {
      close_now();  // the client went away mid-body
      return Step::kProgress;
    }
    if (!ex_->up_out.empty()) {
      return Step::kWait;  // never move in_ while ex_->up_out may point into it
    }
    bool eof = false;
    Step s = read_client(&eof);
    if (s == Step::kWait) {
      return Step::kWait;
    }
    arm_timer(w_.settings().body_timeout_ms);
  }
}

bool ClientConn::can_retry_idle_failure() const {
  return up_reused_ && !retried_idle_ && !response_started_ && http::is_idempotent(up_method_) &&
         req_body_ == http::BodyKind::kNone && up_ && up_->in().empty();
}

void ClientConn::release_upstream(bool reusable) {
  node_finished(false);
  if (!up_) {
    return;
  }
  up_->owner = nullptr;
  io::SocketTransport& t = up_->transport();
  if (t.cancel_read()) {
    reusable = false;  // bytes, FIN or an error after the response: not clean
  }
  if (ex_) {
    ex_->up_out.cancel();
  }
  if (reusable && !t.hangup() && !t.fin() && up_->requests < up_conf_->pool_requests) {
    t.set_readable(false);
    w_.pool().put(std::move(up_), up_conf_->pool_size, up_conf_->pool_idle_ms);
  } else {
    w_.loop().retire(std::move(up_));
  }
}

void ClientConn::upstream_failed(int status, const char* why) {
  SLUICE_LOG(kError, "upstream {} for {}: {}", up_ ? up_->key() : std::string("-"), peer_ip_, why);
  if (response_started_) {
    close_now();
    return;
  }
  local_reply(status, {}, false);
}

}  // namespace sluice::server
