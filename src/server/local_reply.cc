// Gateway-made responses: error replies, admin answers, and the reason phrases they carry.

#include <fmt/format.h>

#include <string>

#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

// The connection's own answers, made without an exchange: a request it could not parse, and
// the Admin API's replies. (An exchange's gateway-made answers go through Exchange::reply.)
void ClientConn::local_reply(int status, std::string_view body, bool close) {
  std::string body_text(body);
  if (body.empty() && status >= 400) {
    body_text = fmt::format("{{\"error_msg\":\"{} {}\"}}\n", status, status_reason(status));
  }
  std::string_view type;
  if (!body_text.empty()) {
    type = body_text.front() == '{' ? "application/json" : "text/plain";
  }
  bool send_body = reply_head(status, type, {}, body_text.size(), close);
  if (send_body) {
    msg_->head += body_text;
  }
  out_.add(msg_->head);
  log_local(status, msg_->head.size(), send_body ? body_text.size() : 0);
}

bool ClientConn::reply_head(int status, std::string_view content_type,
                            std::string_view extra_headers, size_t body_len, bool close) {
  if (!msg_) {
    msg_ = w_.take_message();
  }
  if (close || !req_body_done_ || w_.draining()) {
    keep_alive_ = false;
  }
  // Closing with request bytes still unread: drain them first, or the kernel's reset could
  // destroy our answer before the client reads it.
  linger_after_ = close || !req_body_done_;
  std::string& h = msg_->head;
  h.clear();
  fmt::format_to(std::back_inserter(h), "HTTP/1.1 {} {}\r\n{}Date: {}\r\n", status,
                 status_reason(status), w_.settings().server_header, w_.http_date());
  if (!content_type.empty()) {
    h.append("Content-Type: ").append(content_type).append("\r\n");
  }
  h.append(extra_headers);
  // RFC 9110 8.6: no Content-Length (and no body) on 1xx or 204; 304 has none to describe.
  bool bodiless = status < 200 || status == 204 || status == 304;
  if (!bodiless) {
    fmt::format_to(std::back_inserter(h), "Content-Length: {}\r\n", body_len);
  }
  h += keep_alive_ ? (client_http10_ ? "Connection: keep-alive\r\n\r\n" : "\r\n")
                   : "Connection: close\r\n\r\n";
  out_.clear();
  state_ = State::kLocalReply;
  arm_timer(w_.settings().send_timeout_ms);
  return !bodiless && method_ != http::Method::kHead;
}

std::string_view status_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Moved Temporarily";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "Request-URI Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Temporarily Unavailable";
    case 504:
      return "Gateway Time-out";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace sluice::server
