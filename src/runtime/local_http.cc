#include "runtime/local_http.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "codec/h1/parser.h"
#include "common/log.h"
#include "io/socket.h"
#include "io/transport.h"

namespace sluice::runtime {

namespace {

constexpr size_t kMaxRequest = 16384;
constexpr uint32_t kIdleMs = 10000;

// The phrases of the statuses these endpoints answer with.
std::string_view reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

}  // namespace

// One connection: read one request head, write one answer, close.
// Thread: control
class LocalHttp::Conn final : public io::IoHandler {
 public:
  Conn(LocalHttp& owner, int fd) : owner_(owner), transport_(owner.loop_, this, fd) {
    in_.reserve_total(4096);
    owner_.loop_.arm(timer_, kIdleMs);
  }
  ~Conn() override { io::TimerQueue::cancel(timer_); }
  int fd() const { return transport_.fd(); }

  void on_io(uint32_t events) override {
    transport_.on_events(events);
    if (answer_.empty() && !read_request()) {
      return;
    }
    if (!answer_.empty()) {
      write_answer();
    }
  }

 private:
  static void on_timeout(void* self) {
    auto* c = static_cast<Conn*>(self);
    c->owner_.close(c);
  }

  // False while the head is incomplete; closes the connection on EOF or garbage.
  bool read_request() {
    io::Transport::Read r;
    while ((r = transport_.read(in_, kMaxRequest + 1)) == io::Transport::Read::kData) {
    }
    if (r == io::Transport::Read::kEof) {
      owner_.close(this);
      return false;
    }
    http::RequestHead head;
    h1::ParseResult p = h1::parse_request(in_.view(), h1::Limits{}, &head);
    if (p.status == h1::ParseStatus::kIncomplete && in_.size() <= kMaxRequest) {
      return false;
    }
    if (p.status != h1::ParseStatus::kComplete) {
      answer(400, "text/plain", "bad request\n");
    } else {
      LocalHttp::Answer a = owner_.handler_(head);
      answer(a.status, a.type, head.method == http::Method::kHead ? std::string_view() : a.body,
             a.body.size());
    }
    transport_.cancel_read();  // nothing more is read; the buffer is done with
    out_.add(answer_);
    return true;
  }

  void answer(int status, std::string_view type, std::string_view body, size_t length = SIZE_MAX) {
    answer_ = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        status, reason(status), type, length == SIZE_MAX ? body.size() : length);
    answer_.append(body);
  }

  void write_answer() {
    if (!transport_.writable()) {
      return;
    }
    int err = 0;
    switch (transport_.write(out_, &err)) {
      case io::Outbox::Result::kQueued:
      case io::Outbox::Result::kBlocked:
        return;  // the ring's result or the next EPOLLOUT drives us again
      case io::Outbox::Result::kDone:
      case io::Outbox::Result::kError:
        break;
    }
    owner_.close(this);
  }

  LocalHttp& owner_;
  io::SocketTransport transport_;
  io::Timer timer_{&Conn::on_timeout, this};
  io::Buffer in_;
  std::string answer_;
  io::Outbox out_;
};

LocalHttp::LocalHttp(io::EventLoop& loop, std::string what, Handler handler)
    : loop_(loop), what_(std::move(what)), handler_(std::move(handler)) {}

LocalHttp::~LocalHttp() {
  for (auto& [raw, conn] : conns_) {
    loop_.remove(raw->fd());
  }
  conns_.clear();
  if (fd_ >= 0) {
    loop_.remove(fd_);
    ::close(fd_);
  }
}

common::Status LocalHttp::listen(const std::string& ip, uint16_t port) {
  io::SockAddr addr;
  if (!io::make_sockaddr(ip, port, &addr)) {
    return common::Status::error(fmt::format("{}: bad address {}:{}", what_, ip, port));
  }
  int fd = ::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || ::bind(fd, addr.get(), addr.len) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    return common::Status::error(fmt::format("{} on {}:{}: {}", what_, ip, port, strerror(err)));
  }
  fd_ = fd;
  loop_.add(fd_, this, EPOLLIN | EPOLLET);
  return common::Status::ok();
}

void LocalHttp::adopt(int fd) {
  fd_ = fd;
  loop_.add(fd_, this, EPOLLIN | EPOLLET);
}

void LocalHttp::on_io(uint32_t) { accept_all(); }

void LocalHttp::accept_all() {
  while (true) {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      return;  // EAGAIN, or out of descriptors: the next edge retries
    }
    auto conn = std::make_unique<Conn>(*this, c);
    Conn* raw = conn.get();
    conns_.emplace(raw, std::move(conn));
    loop_.add(c, raw);
  }
}

void LocalHttp::close(Conn* c) {
  auto it = conns_.find(c);
  if (it == conns_.end()) {
    return;
  }
  loop_.remove(c->fd());
  loop_.retire(std::move(it->second));
  conns_.erase(it);
}

}  // namespace sluice::runtime
