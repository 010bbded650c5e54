// resolve_host: a member's addresses, looked up on a thread of its own so a dead DNS server
// costs the caller no more than its deadline.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "etcd/conn.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;

namespace {

constexpr int kMaxLookupsInFlight = 8;
std::atomic<int> g_lookups_in_flight{0};

// A lookup on its own thread; whoever lets go of it last (the caller or the thread) frees it.
struct Lookup {
  std::mutex mu;
  int rc = EAI_SYSTEM;      // guarded by mu
  int error = 0;            // errno after the lookup, for EAI_SYSTEM; guarded by mu
  addrinfo* res = nullptr;  // guarded by mu
  int done_fd = -1;         // an eventfd the thread signals when rc and res are set
  ~Lookup() {
    if (res != nullptr) {
      freeaddrinfo(res);
    }
    if (done_fd >= 0) {
      close(done_fd);
    }
  }
};

}  // namespace

StatusOr<AddrList> resolve_host(const Endpoint& ep, Deadline deadline, int cancel_fd,
                                const Resolver& resolver) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  std::string port = std::to_string(ep.port);
  // errno belongs to the thread that ran the lookup: it is passed along with rc.
  auto failed = [&](int rc, int error) {
    return Status::error(
        fmt::format("{}: cannot resolve {}: {}", ep.url, ep.host,
                    rc == EAI_SYSTEM ? std::string(strerror(error)) : gai_strerror(rc)));
  };
  unsigned char ip[sizeof(in6_addr)];
  if (inet_pton(AF_INET, ep.host.c_str(), ip) == 1 ||
      inet_pton(AF_INET6, ep.host.c_str(), ip) == 1) {
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
      return failed(rc, errno);
    }
    return AddrList(res, freeaddrinfo);
  }
  // A dead DNS server keeps each abandoned lookup for the resolver's own retries (about 30 s
  // with glibc's defaults); past a bound, new ones are refused rather than piling up threads.
  if (g_lookups_in_flight.load(std::memory_order_relaxed) >= kMaxLookupsInFlight) {
    return Status::error(fmt::format("{}: cannot resolve {}: {} earlier lookups have not finished",
                                     ep.url, ep.host, kMaxLookupsInFlight));
  }
  auto lookup = std::make_shared<Lookup>();
  lookup->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (lookup->done_fd < 0) {
    return Status::error(fmt::format("{}: eventfd: {}", ep.url, strerror(errno)));
  }
  try {
    g_lookups_in_flight.fetch_add(1, std::memory_order_relaxed);
    std::thread([lookup, host = ep.host, port, hints, resolver] {
      addrinfo* res = nullptr;
      errno = 0;
      int rc = resolver(host.c_str(), port.c_str(), &hints, &res);
      int error = errno;
      {
        std::lock_guard<std::mutex> lock(lookup->mu);
        lookup->rc = rc;
        lookup->error = error;
        lookup->res = rc == 0 ? res : nullptr;
      }
      uint64_t one = 1;
      ssize_t n = write(lookup->done_fd, &one, sizeof(one));
      (void)n;  // an eventfd write of 1 cannot fail short of overflow
      g_lookups_in_flight.fetch_sub(1, std::memory_order_relaxed);
    }).detach();
  } catch (const std::system_error& e) {
    g_lookups_in_flight.fetch_sub(1, std::memory_order_relaxed);
    return Status::error(
        fmt::format("{}: cannot start a lookup of {}: {}", ep.url, ep.host, e.what()));
  }
  Status w = poll_fd(lookup->done_fd, POLLIN, cancel_fd, deadline, ep.url);
  if (!w) {
    if (w.message().starts_with("timeout")) {
      return Status::error(
          fmt::format("timeout: {}: the lookup of {} did not finish in time", ep.url, ep.host));
    }
    return w;
  }
  std::lock_guard<std::mutex> lock(lookup->mu);
  if (lookup->rc != 0) {
    return failed(lookup->rc, lookup->error);
  }
  AddrList out(lookup->res, freeaddrinfo);
  lookup->res = nullptr;
  return out;
}

}  // namespace sluice::etcd
