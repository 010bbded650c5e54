#include "plugins/loggers/http_sink.h"

#include <fmt/format.h>
#include <strings.h>

#include <charconv>

#include "http/message.h"
#include "plugins/loggers/net.h"
#include "plugins/loggers/sinks.h"

namespace sluice::plugins::loggers {

using common::Status;
using common::StatusOr;

StatusOr<ResponseFacts> parse_response_head(std::string_view head) {
  ResponseFacts f;
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  if (!line.starts_with("HTTP/1.") || line.size() < 12 || line[8] != ' ') {
    return Status::error("not an HTTP/1.x response");
  }
  auto [p, ec] = std::from_chars(line.data() + 9, line.data() + 12, f.status);
  if (ec != std::errc() || f.status < 100) {
    return Status::error("bad status line");
  }
  f.close = line.starts_with("HTTP/1.0");
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    if (line.empty()) {
      break;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status::error("bad header line");
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
      value.remove_suffix(1);
    }
    if (http::iequals(name, "content-length")) {
      int64_t n = -1;
      auto r = std::from_chars(value.data(), value.data() + value.size(), n);
      if (r.ec != std::errc() || n < 0) {
        return Status::error("bad Content-Length");
      }
      f.content_length = n;
    } else if (http::iequals(name, "transfer-encoding")) {
      f.chunked = value.size() >= 7 && http::iequals(value.substr(value.size() - 7), "chunked");
    } else if (http::iequals(name, "connection")) {
      f.close = http::iequals(value, "close")
                    ? true
                    : (http::iequals(value, "keep-alive") ? false : f.close);
    }
  }
  return f;
}

namespace {

constexpr size_t kMaxHead = 64 * 1024;
constexpr size_t kMaxKeptBody = 1024;  // of an error answer, for the log line

// Thread: the sender
class HttpSink final : public batch::Sink {
 public:
  explicit HttpSink(const Conf& c)
      : c_(c), tls_(c.uri.https ? std::make_unique<TlsClient>(c.ssl_verify) : nullptr) {}

  bool send(std::span<const std::string> entries, std::string* err) override {
    const bool single = c_.batch.batch_max_size == 1;
    const bool new_line = c_.concat_method == "new_line";
    const size_t length = joined_size(entries, single, new_line);
    std::string req = fmt::format(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n", c_.uri.path,
        c_.uri.host_header, c_.concat_method == "json" ? "application/json" : "text/plain", length);
    if (!c_.auth_header.empty()) {
      req.append("Authorization: ").append(c_.auth_header).append("\r\n");
    }
    req.append("\r\n");
    join_entries(entries, single, new_line, &req);  // the body, in the same buffer
    // A kept-alive connection the server closed meanwhile is not the server's failure: the
    // batch goes once more on a new one.
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = conn_ != nullptr;
      if (reused && conn_->stale()) {
        conn_.reset();
        continue;
      }
      if (!conn_) {
        if (Status s = connect(err); !s) {
          return false;
        }
      }
      Status s = exchange(req, err);
      if (s) {
        return err->empty();
      }
      conn_.reset();
      if (!reused) {
        return false;
      }
    }
    return false;
  }

 private:
  std::string where() const { return fmt::format("host[{}] port[{}]", c_.uri.host, c_.uri.port); }

  Status connect(std::string* err) {
    auto c = Conn::open(c_.uri.host, c_.uri.port, false, tls_.get(), "", c_.timeout_ms);
    if (!c.is_ok()) {
      const bool tls_failed = c.status().message().find("certificate") != std::string::npos ||
                              c.status().message().find("SSL") != std::string::npos;
      *err = tls_failed
                 ? fmt::format("failed to perform SSL with {} {}", where(), c.status().message())
                 : fmt::format("failed to connect to {} {}", where(), c.status().message());
      return Status::error(*err);
    }
    conn_ = std::move(c).value();
    return Status::ok();
  }

  // Sends the request and reads the whole answer. A transport error returns an error; a
  // status >= 400 returns ok with `*err` set.
  Status exchange(const std::string& req, std::string* err) {
    err->clear();
    if (Status s = conn_->write_all(req); !s) {
      *err = fmt::format("error while sending data to [{}] port[{}] {}", c_.uri.host, c_.uri.port,
                         s.message());
      return s;
    }
    std::string buf;
    size_t end;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (Status s = more(&buf, err); !s) {
        return s;
      }
      if (buf.size() > kMaxHead) {
        return fail(err, "response head too large");
      }
    }
    auto facts = parse_response_head(std::string_view(buf).substr(0, end + 4));
    if (!facts.is_ok()) {
      return fail(err, facts.status().message());
    }
    buf.erase(0, end + 4);
    std::string body;
    if (Status s = read_body(*facts, &buf, &body, err); !s) {
      return s;
    }
    if (facts->close || (!facts->chunked && facts->content_length < 0)) {
      conn_.reset();
    }
    if (facts->status >= 400) {
      *err = fmt::format("server returned status code[{}] {} body[{}]", facts->status, where(),
                         body.substr(0, kMaxKeptBody));
    }
    return Status::ok();
  }

  Status more(std::string* buf, std::string* err) {
    char tmp[16384];
    auto n = conn_->read(tmp, sizeof(tmp));
    if (!n.is_ok()) {
      return fail(err, n.status().message());
    }
    if (*n == 0) {
      return fail(err, "closed");
    }
    buf->append(tmp, *n);
    return Status::ok();
  }

  Status fail(std::string* err, std::string_view why) {
    *err =
        fmt::format("error while sending data to [{}] port[{}] {}", c_.uri.host, c_.uri.port, why);
    return Status::error(*err);
  }

  // The body after the head: by length, chunked, or up to the close; kept up to a bound.
  Status read_body(const ResponseFacts& f, std::string* buf, std::string* body, std::string* err) {
    if (f.chunked) {
      for (;;) {
        size_t eol;
        while ((eol = buf->find("\r\n")) == std::string::npos) {
          if (Status s = more(buf, err); !s) {
            return s;
          }
        }
        size_t n = 0;
        auto r = std::from_chars(buf->data(), buf->data() + eol, n, 16);
        if (r.ec != std::errc()) {
          return fail(err, "bad chunk size");
        }
        const size_t need = eol + 2 + n + 2;
        while (buf->size() < need) {
          if (Status s = more(buf, err); !s) {
            return s;
          }
        }
        if (body->size() < kMaxKeptBody) {
          body->append(*buf, eol + 2, n);
        }
        buf->erase(0, need);
        if (n == 0) {
          return Status::ok();  // trailers are not expected from a log server
        }
      }
    }
    if (f.content_length >= 0) {
      while (buf->size() < static_cast<size_t>(f.content_length)) {
        if (Status s = more(buf, err); !s) {
          return s;
        }
      }
      *body = buf->substr(0, static_cast<size_t>(f.content_length));
      return Status::ok();
    }
    for (;;) {  // until the server closes
      char tmp[16384];
      auto n = conn_->read(tmp, sizeof(tmp));
      if (!n.is_ok() || *n == 0) {
        *body = std::move(*buf);
        return Status::ok();
      }
      buf->append(tmp, *n);
    }
  }

  const Conf c_;
  std::unique_ptr<TlsClient> tls_;
  std::unique_ptr<Conn> conn_;
};

}  // namespace

std::unique_ptr<batch::Sink> make_http_sink(const Conf& conf) {
  return std::make_unique<HttpSink>(conf);
}

}  // namespace sluice::plugins::loggers
