#include "plugins/tracing/http_post.h"

#include <fmt/format.h>

#include <charconv>

#include "plugins/loggers/http_sink.h"
#include "plugins/loggers/net.h"

namespace sluice::plugins::tracing {

using common::Status;
using common::StatusOr;

namespace {

constexpr size_t kMaxHead = 64 * 1024;
constexpr size_t kMaxBody = 1024 * 1024;  // a collector's answer is small; more is refused

}  // namespace

StatusOr<Endpoint> parse_endpoint(std::string_view text, bool bare_ok) {
  Endpoint e;
  std::string_view rest = text;
  if (size_t s = rest.find("://"); s != std::string_view::npos) {
    std::string_view scheme = rest.substr(0, s);
    if (scheme != "http" && scheme != "https") {
      return Status::error(fmt::format("\"{}\": only http and https are supported", text));
    }
    e.https = scheme == "https";
    e.port = e.https ? 443 : 80;
    rest.remove_prefix(s + 3);
  } else if (!bare_ok) {
    return Status::error(fmt::format("\"{}\" is not an http or https URL", text));
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    e.path = std::string(rest.substr(slash));
  }
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::error(fmt::format("\"{}\": bad IPv6 literal", text));
    }
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return Status::error(fmt::format("\"{}\": bad host", text));
      }
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    return Status::error(fmt::format("\"{}\" names no host", text));
  }
  if (!port.empty()) {
    int p = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), p);
    if (r.ec != std::errc() || r.ptr != port.data() + port.size() || p < 1 || p > 65535) {
      return Status::error(fmt::format("\"{}\": bad port", text));
    }
    e.port = static_cast<uint16_t>(p);
  }
  e.host = std::string(host);
  e.host_header = std::string(authority);
  return e;
}

HttpPoster::HttpPoster(Endpoint e, std::string content_type, Headers headers, uint64_t timeout_ms)
    : e_(std::move(e)), timeout_ms_(timeout_ms) {
  head_ = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: {}\r\n", e_.path,
                      e_.host_header, content_type);
  for (const auto& [name, value] : headers) {
    head_.append(name).append(": ").append(value).append("\r\n");
  }
  if (e_.https) {
    tls_ = std::make_unique<loggers::TlsClient>(false);
  }
}

HttpPoster::~HttpPoster() = default;

bool HttpPoster::post(std::string_view body, std::string* err) {
  std::string req = head_;
  req.append(fmt::format("Content-Length: {}\r\n\r\n", body.size())).append(body);
  // A kept-alive connection the server closed meanwhile gets the batch once more on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = conn_ != nullptr;
    if (reused && conn_->stale()) {
      conn_.reset();
      continue;
    }
    if (!conn_) {
      auto c = loggers::Conn::open(e_.host, e_.port, false, tls_.get(), "", timeout_ms_);
      if (!c.is_ok()) {
        *err = fmt::format("failed to connect to host[{}] port[{}] {}", e_.host, e_.port,
                           c.status().message());
        return false;
      }
      conn_ = std::move(c).value();
    }
    if (exchange(req, err)) {
      return err->empty();
    }
    conn_.reset();
    if (!reused) {
      return false;
    }
  }
  return false;
}

Status HttpPoster::more(std::string* buf) {
  char tmp[16384];
  auto n = conn_->read(tmp, sizeof(tmp));
  if (!n.is_ok()) {
    return n.status();
  }
  if (*n == 0) {
    return Status::error("closed");
  }
  buf->append(tmp, *n);
  return buf->size() > kMaxHead + kMaxBody ? Status::error("answer too large") : Status::ok();
}

// Sends the request and reads the answer whole; a transport error is an error, a status
// other than 2xx is ok with `*err` set.
Status HttpPoster::exchange(const std::string& req, std::string* err) {
  err->clear();
  auto fail = [&](std::string_view why) {
    *err = fmt::format("error while sending data to host[{}] port[{}] {}", e_.host, e_.port, why);
    return Status::error(*err);
  };
  if (Status s = conn_->write_all(req); !s) {
    return fail(s.message());
  }
  std::string buf;
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (Status s = more(&buf); !s) {
      return fail(s.message());
    }
  }
  auto facts = loggers::parse_response_head(std::string_view(buf).substr(0, end + 4));
  if (!facts.is_ok()) {
    return fail(facts.status().message());
  }
  buf.erase(0, end + 4);
  if (facts->chunked) {
    while (buf.find("0\r\n\r\n") == std::string::npos) {  // small answers: the end is enough
      if (Status s = more(&buf); !s) {
        return fail(s.message());
      }
    }
    facts->close = true;  // the end was found by its look: start the next batch afresh
  } else if (facts->content_length >= 0) {
    while (buf.size() < static_cast<size_t>(facts->content_length)) {
      if (Status s = more(&buf); !s) {
        return fail(s.message());
      }
    }
  } else {
    while (more(&buf)) {  // until the server closes
    }
    facts->close = true;
  }
  if (facts->close) {
    conn_.reset();
  }
  if (facts->status < 200 || facts->status > 299) {
    *err = fmt::format("collector host[{}] port[{}] returned status code[{}] body[{}]", e_.host,
                       e_.port, facts->status, buf.substr(0, 1024));
  }
  return Status::ok();
}

}  // namespace sluice::plugins::tracing
