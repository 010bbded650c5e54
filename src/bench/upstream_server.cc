#include "bench/upstream_server.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bench/upstream_worker.h"

namespace sluice::bench {

using common::Status;

namespace {

std::string head(std::string_view status, size_t length, std::string_view extra) {
  return fmt::format("HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{}\r\n",
                     status, length, extra);
}

common::StatusOr<int> listen_on(const io::SockAddr& addr) {
  int fd = socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Status::error(fmt::format("socket: {}", strerror(errno)));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, addr.get(), addr.len) != 0 || listen(fd, 4096) != 0) {
    int e = errno;
    close(fd);
    return Status::error(fmt::format("cannot listen on {}: {}", address_text(addr), strerror(e)));
  }
  return fd;
}

}  // namespace

UpstreamResponses::UpstreamResponses(const std::string& b)
    : keep_alive(head("200 OK", b.size(), "")),
      close(head("200 OK", b.size(), "Connection: close\r\n")),
      keep_alive_10(head("200 OK", b.size(), "Connection: keep-alive\r\n")),
      bad_request(head("400 Bad Request", 12, "Connection: close\r\n") + "bad request\n"),
      body(b) {}

common::StatusOr<std::unique_ptr<Upstream>> Upstream::start(const UpstreamOptions& options) {
  std::unique_ptr<Upstream> u(new Upstream());
  auto fd = listen_on(options.listen);
  if (!fd) {
    return fd.status();
  }
  u->listen_fd_ = *fd;
  u->bound_ = options.listen;
  u->bound_.len = sizeof(u->bound_.storage);
  getsockname(u->listen_fd_, reinterpret_cast<sockaddr*>(&u->bound_.storage), &u->bound_.len);
  u->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (u->stop_fd_ < 0) {
    return Status::error(fmt::format("eventfd: {}", strerror(errno)));
  }
  u->responses_ = std::make_unique<UpstreamResponses>(options.body);
  if (options.service_us > 0) {
    u->clock_ = std::make_unique<ServiceClock>(options.service_us * 1000);
  }
  for (int i = 0; i < options.threads; ++i) {
    u->workers_.push_back(std::make_unique<UpstreamWorker>(u->listen_fd_, u->stop_fd_,
                                                           *u->responses_, u->clock_.get()));
  }
  for (auto& w : u->workers_) {
    u->threads_.emplace_back([w = w.get()] { w->run(); });
  }
  return u;
}

void Upstream::stop() {
  if (stop_fd_ >= 0) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof(one));
  }
  for (std::thread& t : threads_) {
    t.join();
  }
  threads_.clear();
  workers_.clear();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
  if (stop_fd_ >= 0) {
    close(stop_fd_);
    stop_fd_ = -1;
  }
}

Upstream::~Upstream() { stop(); }

}  // namespace sluice::bench
