// The admin half of an exchange: read an Admin API request whole (head and body, capped at
// kAdminMaxBody), hand it to the control thread through Settings::admin, wait without reading
// further, and write the answer that comes back through Worker::on_admin_reply.

#include <algorithm>
#include <string>

#include "common/log.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c | 0x20);
    }
  }
  return out;
}

// Headers the worker writes itself, and anything that could split the head: the handler's
// answer must not change the framing of the connection.
bool admin_header_allowed(std::string_view name, std::string_view value) {
  if (name.empty() || name.find_first_of(":\r\n") != std::string_view::npos ||
      value.find_first_of("\r\n") != std::string_view::npos) {
    return false;
  }
  return !http::iequals(name, "content-length") && !http::iequals(name, "date") &&
         !http::iequals(name, "server") && !http::is_hop_by_hop(name);
}

}  // namespace

// Called from start_exchange with the head parsed and not yet consumed.
void ClientConn::start_admin() {
  capture_for_log();
  const http::RequestHead& r = msg_->req;
  if (req_body_ == http::BodyKind::kLength && req_left_ > kAdminMaxBody) {
    // Refused before a byte of the body is read; the body left unread makes this close.
    release_head();
    local_reply(413, {}, false);
    return;
  }
  admin_ = std::make_unique<AdminExchange>();
  AdminRequest& a = admin_->req;
  a.method.assign(r.method_text);
  a.path.assign(r.path);
  a.query.assign(r.query);
  a.headers.reserve(r.num_headers);
  for (size_t i = 0; i < r.num_headers; ++i) {
    a.headers.emplace_back(lower(r.headers[i].name), std::string(r.headers[i].value));
  }
  a.peer_ip = std::string(client_ip_);
  a.peer = client_addr_;
  a.on_proxy_port = !admin_port_;
  bool expect = r.expect_continue;
  release_head();  // msg_->req's views are dead from here on
  if (expect && !req_body_done_ && in_.empty()) {
    out_.add(kContinue);
  }
  state_ = State::kAdminBody;
  arm_timer(w_.settings().body_timeout_ms);
}

// Moves the body from the read buffer into the request, de-chunking it; submits once whole.
ClientConn::Step ClientConn::read_admin_body() {
  std::string& body = admin_->req.body;
  while (!req_body_done_) {
    if (!in_.empty()) {
      if (req_body_ == http::BodyKind::kLength) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(req_left_, in_.size()));
        body.append(in_.data(), n);
        request_in_ += n;
        in_.consume(n);
        req_left_ -= n;
        req_body_done_ = req_left_ == 0;
        continue;
      }
      h1::ChunkedDecoder::Step st = msg_->req_chunked.step(in_.view());
      switch (st.status) {
        case h1::ChunkedDecoder::Status::kData:
          if (body.size() + st.data.size() > kAdminMaxBody) {
            SLUICE_LOG(kInfo, "client {}: admin request body over {} bytes", peer_ip_,
                       kAdminMaxBody);
            local_reply(413, {}, false);  // the rest stays unread: the connection closes
            return Step::kProgress;
          }
          body.append(st.data);
          request_in_ += st.consumed;
          in_.consume(st.consumed);
          continue;
        case h1::ChunkedDecoder::Status::kDone:
          request_in_ += st.consumed;
          in_.consume(st.consumed);
          req_body_done_ = true;
          continue;
        case h1::ChunkedDecoder::Status::kError:
          SLUICE_LOG(kInfo, "client {}: bad chunked admin request body", peer_ip_);
          local_reply(400, {}, true);
          return Step::kProgress;
        case h1::ChunkedDecoder::Status::kNeedMore:
          request_in_ += st.consumed;
          in_.consume(st.consumed);
          continue;
      }
    }
    if (client_eof_) {
      close_now();  // the client went away mid-body
      return Step::kProgress;
    }
    bool eof = false;
    if (read_client(&eof) == Step::kWait) {
      return Step::kWait;
    }
    arm_timer(w_.settings().body_timeout_ms);
  }
  submit_admin();
  return Step::kProgress;
}

void ClientConn::submit_admin() {
  admin_->wait_id = w_.admin_wait(this);
  state_ = State::kAdminWait;
  arm_timer(w_.settings().admin_reply_timeout_ms);
  // The handler may answer before submit() returns; the answer is posted, never re-entrant.
  w_.settings().admin->submit(std::move(admin_->req), w_.admin_replier(admin_->wait_id));
}

void ClientConn::on_admin_reply(AdminResponse resp) {
  if (state_ != State::kAdminWait || !admin_) {
    return;
  }
  admin_->wait_id = 0;  // the worker has already unregistered it
  admin_->resp = std::move(resp);
  const AdminResponse& a = admin_->resp;
  std::string extra;
  bool has_type = false;
  for (const auto& [name, value] : a.headers) {
    if (!admin_header_allowed(name, value)) {
      SLUICE_LOG(kWarn, "admin answer header '{}' dropped", name);
      continue;
    }
    has_type = has_type || http::iequals(name, "content-type");
    extra.append(name).append(": ").append(value).append("\r\n");
  }
  bool send_body = reply_head(a.status, has_type ? std::string_view() : "application/json", extra,
                              a.body.size(), false);
  out_.add(msg_->head);
  if (send_body) {
    out_.add(a.body);  // admin_ lives until next_request(), after the body is flushed
  }
  log_local(a.status, msg_->head.size() + (send_body ? a.body.size() : 0),
            send_body ? a.body.size() : 0);
  drive();
}

void ClientConn::admin_timed_out() {
  SLUICE_LOG(kError, "client {}: no Admin API answer within {} ms", peer_ip_,
             w_.settings().admin_reply_timeout_ms);
  forget_admin();
  local_reply(504, {}, true);
}

void ClientConn::forget_admin() {
  if (admin_ && admin_->wait_id != 0) {
    w_.admin_forget(admin_->wait_id);
    admin_->wait_id = 0;
  }
}

}  // namespace sluice::server
