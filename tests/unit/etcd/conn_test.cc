// resolve_host: member names are looked up off the caller's thread, so the Admin API's calls
// and the watch stay bound by their deadline and stop promptly however slow the resolver is.

#include "etcd/conn.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace sluice::etcd {
namespace {

using common::StatusOr;
using namespace std::chrono_literals;

Endpoint member(const char* url) { return *parse_endpoint(url); }

// A resolver that answers 127.0.0.1 when released, and says when it has returned.
struct HeldResolver {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::atomic<int> calls{0};
  std::atomic<int> returned{0};

  Resolver fn() {
    return [this](const char*, const char* port, const addrinfo* hints, addrinfo** out) {
      ++calls;
      {
        // Bounded, so a resolve_host that waited on the resolver itself fails on its timing
        // instead of hanging the test.
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, 5s, [this] { return released; });
      }
      int rc = getaddrinfo("127.0.0.1", port, hints, out);
      ++returned;
      return rc;
    };
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      released = true;
    }
    cv.notify_all();
  }
  // Releases the lookup the test started and waits until it has returned: the thread holds
  // `this`, so it must be done before the test's frame goes.
  void release_and_wait_for(int n = 1) {
    release();
    while (returned.load() < n) {
      std::this_thread::sleep_for(1ms);
    }
  }
};

TEST(ResolveHost, AddressesAreNotLookedUp) {
  Resolver never = [](const char*, const char*, const addrinfo*, addrinfo**) {
    ADD_FAILURE() << "the resolver was called for an address";
    return EAI_FAIL;
  };
  for (const char* url : {"http://127.0.0.1:2379", "http://[::1]:2379"}) {
    auto r = resolve_host(member(url), Clock::now() + 1s, -1, never);
    ASSERT_TRUE(r) << r.status().message();
    ASSERT_NE(r->get(), nullptr);
  }
}

TEST(ResolveHost, NamesResolveThroughTheSystem) {
  auto r = resolve_host(member("http://localhost:12379"), Clock::now() + 5s, -1);
  ASSERT_TRUE(r) << r.status().message();
  bool loopback = false;
  for (addrinfo* ai = r->get(); ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(ai->ai_addr);
      loopback = loopback ||
                 (ntohl(sin->sin_addr.s_addr) == INADDR_LOOPBACK && ntohs(sin->sin_port) == 12379);
    }
  }
  EXPECT_TRUE(loopback);
}

TEST(ResolveHost, ResolverErrorsAreReported) {
  Resolver none = [](const char*, const char*, const addrinfo*, addrinfo**) { return EAI_NONAME; };
  auto r = resolve_host(member("http://etcd-a:2379"), Clock::now() + 1s, -1, none);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            std::string("http://etcd-a:2379: cannot resolve etcd-a: ") + gai_strerror(EAI_NONAME));
}

TEST(ResolveHost, SystemErrorsNameTheLookupThreadsErrno) {
  Resolver broken = [](const char*, const char*, const addrinfo*, addrinfo**) {
    errno = ECONNREFUSED;
    return EAI_SYSTEM;
  };
  errno = 0;
  auto r = resolve_host(member("http://etcd-a:2379"), Clock::now() + 1s, -1, broken);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            std::string("http://etcd-a:2379: cannot resolve etcd-a: ") + strerror(ECONNREFUSED));
}

TEST(ResolveHost, AbandonedLookupsAreBounded) {
  HeldResolver dead;
  for (int i = 0; i < 8; ++i) {
    auto r = resolve_host(member("http://etcd-a:2379"), Clock::now() + 20ms, -1, dead.fn());
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.status().message().starts_with("timeout: ")) << r.status().message();
  }
  auto r = resolve_host(member("http://etcd-a:2379"), Clock::now() + 1s, -1, dead.fn());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "http://etcd-a:2379: cannot resolve etcd-a: 8 earlier lookups have not finished");
  dead.release_and_wait_for(8);
  // The threads are gone once they have returned and let go of their state; then lookups
  // are accepted again.
  HeldResolver quick;
  quick.release();
  auto deadline = Clock::now() + 5s;
  StatusOr<AddrList> ok = common::Status::error("not tried");
  do {
    ok = resolve_host(member("http://etcd-a:2379"), Clock::now() + 1s, -1, quick.fn());
  } while (!ok && Clock::now() < deadline && (std::this_thread::sleep_for(1ms), true));
  EXPECT_TRUE(ok) << ok.status().message();
}

TEST(ResolveHost, SlowLookupAnswersWithinTheDeadline) {
  HeldResolver slow;
  auto start = Clock::now();
  auto r = resolve_host(member("http://etcd-a:2379"), start + 200ms, -1, slow.fn());
  auto took = Clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(),
            "timeout: http://etcd-a:2379: the lookup of etcd-a did not finish in time");
  EXPECT_GE(took, 190ms);
  EXPECT_LT(took, 2s);
  // The abandoned lookup finishes later and frees its answer (ASan's leak check in CI).
  slow.release_and_wait_for();
  EXPECT_EQ(slow.calls.load(), 1);
}

TEST(ResolveHost, CancelStopsTheWait) {
  HeldResolver slow;
  int cancel = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(cancel, 0);
  std::thread canceller([cancel] {
    std::this_thread::sleep_for(50ms);
    uint64_t one = 1;
    EXPECT_EQ(write(cancel, &one, sizeof(one)), 8);
  });
  auto start = Clock::now();
  auto r = resolve_host(member("http://etcd-a:2379"), start + 30s, cancel, slow.fn());
  auto took = Clock::now() - start;
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "cancelled: http://etcd-a:2379");
  EXPECT_LT(took, 5s);
  slow.release_and_wait_for();
  close(cancel);
}

TEST(ResolveHost, AnsweredLookupGivesItsAddresses) {
  HeldResolver quick;
  quick.release();  // before the call: answers at once
  auto r = resolve_host(member("http://etcd-a:2400"), Clock::now() + 5s, -1, quick.fn());
  ASSERT_TRUE(r) << r.status().message();
  auto* sin = reinterpret_cast<sockaddr_in*>(r->get()->ai_addr);
  EXPECT_EQ(ntohs(sin->sin_port), 2400);
}

}  // namespace
}  // namespace sluice::etcd
