// What a batch of socket calls costs made one system call at a time, and made through
// io::Ring (one io_uring_enter for the batch): K loopback TCP connections, each gets a
// 200-byte write and the matching read per iteration, as a gateway's batch of events does.
// CPU time per write+read pair is the figure (docs/performance.md, "io_uring batches").

#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "io/ring.h"

namespace sluice::io {
namespace {

struct Pairs {
  std::vector<int> a, b;
  explicit Pairs(int k) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(l, 256);
    getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len);
    int one = 1;
    for (int i = 0; i < k; ++i) {
      int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      int s = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
      for (int fd : {c, s}) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        fcntl(fd, F_SETFL, O_NONBLOCK);
      }
      a.push_back(c);
      b.push_back(s);
    }
    close(l);
  }
  ~Pairs() {
    for (size_t i = 0; i < a.size(); ++i) {
      close(a[i]);
      close(b[i]);
    }
  }
};

// The 200-byte write every connection gets.
struct Message {
  std::string text = std::string(200, 'x');
  iovec iov{text.data(), text.size()};
  msghdr mh{nullptr, 0, &iov, 1, nullptr, 0, 0};
};

struct Nop : IoHandler {
  void on_io(uint32_t) override {}
};

bool always(IoHandler*) { return true; }

void BM_WriteReadPlainSyscalls(benchmark::State& state) {
  int k = static_cast<int>(state.range(0));
  Pairs p(k);
  Message m;
  char buf[4096];
  for (auto _ : state) {
    for (int i = 0; i < k; ++i) {
      benchmark::DoNotOptimize(sendmsg(p.a[i], &m.mh, MSG_NOSIGNAL));
    }
    for (int i = 0; i < k; ++i) {
      benchmark::DoNotOptimize(recv(p.b[i], buf, sizeof(buf), 0));
    }
  }
  state.SetItemsProcessed(state.iterations() * k);
}

void BM_WriteReadRing(benchmark::State& state) {
  int k = static_cast<int>(state.range(0));
  std::string why;
  std::unique_ptr<Ring> ring = Ring::create(256, &why);
  if (!ring) {
    state.SkipWithError(("io_uring is not usable here: " + why).c_str());
    return;
  }
  Pairs p(k);
  Message m;
  std::vector<RingOp> ops(static_cast<size_t>(k));
  std::vector<std::string> bufs(static_cast<size_t>(k), std::string(4096, '\0'));
  Nop h;
  for (auto _ : state) {
    for (int i = 0; i < k; ++i) {
      ring->queue_sendmsg(&ops[i], &h, p.a[i], &m.mh);
    }
    ring->run(always);
    for (int i = 0; i < k; ++i) {
      benchmark::DoNotOptimize(ops[i].take());
      ring->queue_recv(&ops[i], &h, p.b[i], bufs[i].data(), bufs[i].size());
    }
    ring->run(always);
    for (int i = 0; i < k; ++i) {
      benchmark::DoNotOptimize(ops[i].take());
    }
  }
  state.SetItemsProcessed(state.iterations() * k);
  state.counters["calls_per_enter"] =
      static_cast<double>(ring->stats().batched_calls) /
      static_cast<double>(std::max<uint64_t>(ring->stats().enters, 1));
}

BENCHMARK(BM_WriteReadPlainSyscalls)->Arg(1)->Arg(2)->Arg(4)->Arg(16)->Arg(64);
BENCHMARK(BM_WriteReadRing)->Arg(1)->Arg(2)->Arg(4)->Arg(16)->Arg(64);

}  // namespace
}  // namespace sluice::io
