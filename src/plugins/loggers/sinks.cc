#include "plugins/loggers/sinks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "plugins/loggers/http_sink.h"
#include "plugins/loggers/net.h"

namespace sluice::plugins::loggers {

using common::Status;

namespace {

std::atomic<uint64_t> g_reopen{0};

// tcp-logger and udp-logger: a connection per batch, as APISIX's send_tcp_data /
// send_udp_data; syslog keeps its connection (resty.logger.socket's pool) and sends each UDP
// message as its own datagram.
// Thread: the sender
class SocketSink final : public batch::Sink {
 public:
  explicit SocketSink(const Conf& c)
      : c_(c), tls_(c.tls ? std::make_unique<TlsClient>(false) : nullptr) {}

  bool send(std::span<const std::string> entries, std::string* err) override {
    if (c_.kind == Kind::kSyslog) {
      return send_syslog(entries, err);
    }
    std::string body;
    join_entries(entries, c_.batch.batch_max_size == 1, false, &body);
    const char* proto = c_.kind == Kind::kUdp ? "UDP" : "TCP";
    auto conn = Conn::open(c_.host, c_.port, c_.kind == Kind::kUdp, tls_.get(), c_.tls_server_name,
                           c_.timeout_ms);
    if (!conn.is_ok()) {
      *err = fmt::format("failed to connect to {} server: host[{}] port[{}] err: {}", proto,
                         c_.host, c_.port, conn.status().message());
      return false;
    }
    if (Status s = (*conn)->write_all(body); !s) {
      *err = fmt::format("failed to send data to {} server: host[{}] port[{}] err: {}", proto,
                         c_.host, c_.port, s.message());
      return false;
    }
    return true;
  }

 private:
  bool send_syslog(std::span<const std::string> entries, std::string* err) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (conn_ == nullptr || (!c_.udp && conn_->stale())) {
        auto c = Conn::open(c_.host, c_.port, c_.udp, tls_.get(), "", c_.timeout_ms);
        if (!c.is_ok()) {
          *err = fmt::format("failed to log message: failed to connect: host[{}] port[{}] {}",
                             c_.host, c_.port, c.status().message());
          return false;
        }
        conn_ = std::move(c).value();
      }
      Status s = Status::ok();
      if (c_.udp) {
        for (const std::string& e : entries) {
          if (s = conn_->write_all(e); !s) {
            break;
          }
        }
      } else {
        std::string all;
        for (const std::string& e : entries) {
          all.append(e);
        }
        s = conn_->write_all(all);
      }
      if (s) {
        return true;
      }
      conn_.reset();
      *err = fmt::format("failed to log message: {}", s.message());
      if (c_.udp) {
        return false;
      }
    }
    return false;
  }

  const Conf c_;
  std::unique_ptr<TlsClient> tls_;
  std::unique_ptr<Conn> conn_;
};

// file-logger: lines appended; the path opened again after SIGUSR1.
// Thread: the sender
class FileSink final : public batch::Sink {
 public:
  explicit FileSink(std::string path) : path_(std::move(path)) {}
  ~FileSink() override {
    if (fd_ >= 0) {
      close(fd_);
    }
  }

  bool send(std::span<const std::string> entries, std::string* err) override {
    const uint64_t gen = g_reopen.load(std::memory_order_acquire);
    if (fd_ >= 0 && gen != gen_) {
      close(fd_);
      fd_ = -1;
    }
    if (fd_ < 0) {
      fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) {
        *err = fmt::format("failed to open file: {}, error info: {}", path_, strerror(errno));
        return false;
      }
      gen_ = gen;
    }
    std::string all;
    for (const std::string& e : entries) {
      all.append(e).push_back('\n');
    }
    std::string_view left = all;
    while (!left.empty()) {
      ssize_t n = ::write(fd_, left.data(), left.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        *err = fmt::format("failed to write file: {}, error info: {}", path_, strerror(errno));
        // What was written stays; a retry would write it twice, so the rest is dropped.
        return left.size() == all.size() ? false : true;
      }
      left.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t gen_ = 0;
};

}  // namespace

void reopen_files() { g_reopen.fetch_add(1, std::memory_order_acq_rel); }

void join_entries(std::span<const std::string> entries, bool single, bool new_line,
                  std::string* out) {
  out->reserve(out->size() + joined_size(entries, single, new_line));
  if (single && entries.size() == 1) {
    out->append(entries[0]);
    return;
  }
  if (!new_line) {
    out->push_back('[');
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      out->push_back(new_line ? '\n' : ',');
    }
    out->append(entries[i]);
  }
  if (!new_line) {
    out->push_back(']');
  }
}

size_t joined_size(std::span<const std::string> entries, bool single, bool new_line) {
  if (single && entries.size() == 1) {
    return entries[0].size();
  }
  size_t n = new_line ? 0 : 2;
  for (const std::string& e : entries) {
    n += e.size();
  }
  return n + (entries.empty() ? 0 : entries.size() - 1);
}

std::unique_ptr<batch::Sink> make_sink(const Conf& conf) {
  switch (conf.kind) {
    case Kind::kHttp:
      return make_http_sink(conf);
    case Kind::kFile:
      return std::make_unique<FileSink>(conf.path);
    case Kind::kTcp:
    case Kind::kUdp:
    case Kind::kSyslog:
      break;
  }
  return std::make_unique<SocketSink>(conf);
}

}  // namespace sluice::plugins::loggers
