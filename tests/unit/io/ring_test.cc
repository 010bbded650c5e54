#include "io/ring.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "io/outbox.h"

namespace sluice::io {
namespace {

// io_uring is missing under qemu-user (make test-arm64) and where seccomp or
// kernel.io_uring_disabled forbid it; the gateway then makes plain system calls, and these
// tests say why they did not run.
#define RING_OR_SKIP(name)                                   \
  std::string why_;                                          \
  std::unique_ptr<Ring> name = Ring::create(64, &why_);      \
  if (!name) {                                               \
    GTEST_SKIP() << "io_uring is not usable here: " << why_; \
  }

struct Handler : IoHandler {
  int calls = 0;
  std::function<void()> fn;
  void on_io(uint32_t events) override {
    EXPECT_EQ(events, 0u);
    ++calls;
    if (fn) {
      fn();
    }
  }
};

bool always(IoHandler*) { return true; }

// A connected pair of non-blocking loopback TCP sockets.
struct TcpPair {
  int a = -1;
  int b = -1;
  TcpPair() {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(l, 4), 0);
    EXPECT_EQ(getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    b = accept4(l, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    fcntl(a, F_SETFL, O_NONBLOCK);
    close(l);
  }
  ~TcpPair() {
    close(a);
    close(b);
  }
};

msghdr one_iov(iovec* iov, std::string& s) {
  iov->iov_base = s.data();
  iov->iov_len = s.size();
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = 1;
  return m;
}

TEST(RingTest, CallsOfOneRoundShareOneEnter) {
  RING_OR_SKIP(ring);
  constexpr int kPairs = 4;
  std::vector<TcpPair> pairs(kPairs);
  std::vector<std::string> msgs;
  for (int i = 0; i < kPairs; ++i) {
    msgs.push_back("message " + std::to_string(i));
  }
  std::vector<iovec> iov(kPairs);
  std::vector<msghdr> mh(kPairs);
  std::vector<RingOp> ops(kPairs);
  Handler h;
  for (int i = 0; i < kPairs; ++i) {
    mh[i] = one_iov(&iov[i], msgs[i]);
    ring->queue_sendmsg(&ops[i], &h, pairs[i].a, &mh[i]);
  }
  EXPECT_FALSE(ring->empty());
  ring->run(always);
  EXPECT_TRUE(ring->empty());
  EXPECT_EQ(h.calls, kPairs);
  for (int i = 0; i < kPairs; ++i) {
    ASSERT_TRUE(ops[i].done());
    EXPECT_EQ(ops[i].take(), static_cast<int>(msgs[i].size()));
    EXPECT_TRUE(ops[i].idle());
  }
  EXPECT_EQ(ring->stats().batched_calls, static_cast<uint64_t>(kPairs));
  EXPECT_EQ(ring->stats().enters, 1u);

  // The reads, again in one enter: each lands in its own buffer.
  std::vector<std::string> bufs(kPairs, std::string(64, '\0'));
  for (int i = 0; i < kPairs; ++i) {
    ring->queue_recv(&ops[i], &h, pairs[i].b, bufs[i].data(), bufs[i].size());
  }
  ring->run(always);
  EXPECT_EQ(ring->stats().enters, 2u);
  for (int i = 0; i < kPairs; ++i) {
    int n = ops[i].take();
    ASSERT_EQ(n, static_cast<int>(msgs[i].size()));
    EXPECT_EQ(bufs[i].substr(0, static_cast<size_t>(n)), msgs[i]);
  }
}

TEST(RingTest, ReadsOfEmptySocketsComeBackEagainAtOnce) {
  RING_OR_SKIP(ring);
  TcpPair p1, p2;
  char b1[16], b2[16];
  RingOp o1, o2;
  Handler h;
  ring->queue_recv(&o1, &h, p1.b, b1, sizeof(b1));
  ring->queue_recv(&o2, &h, p2.b, b2, sizeof(b2));
  ring->run(always);  // would hang here if a read were left waiting for data
  EXPECT_EQ(o1.take(), -EAGAIN);
  EXPECT_EQ(o2.take(), -EAGAIN);
  EXPECT_EQ(h.calls, 2);
}

TEST(RingTest, AOneCallRoundIsAPlainSystemCall) {
  RING_OR_SKIP(ring);
  TcpPair p;
  std::string msg = "solo";
  iovec iov;
  msghdr m = one_iov(&iov, msg);
  RingOp op;
  Handler h;
  ring->queue_sendmsg(&op, &h, p.a, &m);
  ring->run(always);
  EXPECT_EQ(op.take(), 4);
  EXPECT_EQ(ring->stats().direct_calls, 1u);
  EXPECT_EQ(ring->stats().enters, 0u);
  char buf[8];
  EXPECT_EQ(recv(p.b, buf, sizeof(buf), 0), 4);
}

TEST(RingTest, ACancelledCallIsNeverMade) {
  RING_OR_SKIP(ring);
  TcpPair p1, p2, p3;
  std::string m1 = "one", m2 = "two", m3 = "three";
  iovec i1, i2, i3;
  msghdr h1 = one_iov(&i1, m1), h2 = one_iov(&i2, m2), h3 = one_iov(&i3, m3);
  RingOp o1, o2, o3;
  Handler a, b, c;
  ring->queue_sendmsg(&o1, &a, p1.a, &h1);
  ring->queue_sendmsg(&o2, &b, p2.a, &h2);
  ring->queue_sendmsg(&o3, &c, p3.a, &h3);
  o2.cancel();
  EXPECT_TRUE(o2.idle());
  ring->run(always);
  EXPECT_EQ(o1.take(), 3);
  EXPECT_TRUE(o2.idle());
  EXPECT_EQ(o3.take(), 5);
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 0);
  EXPECT_EQ(c.calls, 1);
  char buf[8];
  EXPECT_EQ(recv(p2.b, buf, sizeof(buf), MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(ring->stats().batched_calls, 2u);

  // A slot destroyed while queued cancels itself.
  {
    RingOp gone;
    ring->queue_sendmsg(&gone, &b, p2.a, &h2);
  }
  EXPECT_TRUE(ring->empty());
  ring->run(always);
  EXPECT_EQ(recv(p2.b, buf, sizeof(buf), MSG_DONTWAIT), -1);
}

TEST(RingTest, CallsQueuedByADrivenHandlerRunInTheSameRun) {
  RING_OR_SKIP(ring);
  TcpPair p1, p2;
  std::string m = "ping";
  iovec iov1, iov2;
  msghdr h1 = one_iov(&iov1, m), h2 = one_iov(&iov2, m);
  RingOp o1, o2, rd;
  char buf[16];
  Handler h;
  int rounds = 0;
  h.fn = [&] {
    // First round: the two writes; the handler then reads what the first one wrote.
    if (++rounds == 2) {
      ring->queue_recv(&rd, &h, p1.b, buf, sizeof(buf));
    }
  };
  ring->queue_sendmsg(&o1, &h, p1.a, &h1);
  ring->queue_sendmsg(&o2, &h, p2.a, &h2);
  ring->run(always);
  EXPECT_EQ(h.calls, 3);
  EXPECT_EQ(rd.take(), 4);
  EXPECT_EQ(std::string(buf, 4), "ping");
}

TEST(RingTest, HandlersThatAreGoneAreNotDriven) {
  RING_OR_SKIP(ring);
  TcpPair p1, p2;
  char b1[8], b2[8];
  RingOp o1, o2;
  Handler live, dead;
  ring->queue_recv(&o1, &live, p1.b, b1, sizeof(b1));
  ring->queue_recv(&o2, &dead, p2.b, b2, sizeof(b2));
  ring->run([&](IoHandler* x) { return x != &dead; });
  EXPECT_EQ(live.calls, 1);
  EXPECT_EQ(dead.calls, 0);
  EXPECT_TRUE(o2.done());  // made all the same; the owner is going away
}

TEST(RingTest, ErrorsComeBackAsNegativeErrno) {
  RING_OR_SKIP(ring);
  int sv[2], sw[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sw), 0);
  close(sv[1]);
  close(sw[1]);
  std::string m = "x";
  iovec i1, i2;
  msghdr h1 = one_iov(&i1, m), h2 = one_iov(&i2, m);
  RingOp o1, o2;
  Handler h;
  ring->queue_sendmsg(&o1, &h, sv[0], &h1);  // no SIGPIPE: MSG_NOSIGNAL
  ring->queue_sendmsg(&o2, &h, sw[0], &h2);
  ring->run(always);
  EXPECT_EQ(o1.take(), -EPIPE);
  EXPECT_EQ(o2.take(), -EPIPE);
  close(sv[0]);
  close(sw[0]);
}

TEST(RingTest, MoreCallsThanSlotsAreSubmittedInChunks) {
  RING_OR_SKIP(ring);  // 64 slots
  constexpr int kCalls = 150;
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  std::vector<char> bufs(kCalls);
  std::vector<RingOp> ops(kCalls);
  Handler h;
  for (int i = 0; i < kCalls; ++i) {
    ring->queue_recv(&ops[i], &h, sv[1], &bufs[i], 1);
  }
  ring->run(always);
  EXPECT_EQ(h.calls, kCalls);
  for (auto& op : ops) {
    EXPECT_EQ(op.take(), -EAGAIN);
  }
  EXPECT_EQ(ring->stats().batched_calls, static_cast<uint64_t>(kCalls));
  EXPECT_GE(ring->stats().enters, 3u);
  close(sv[0]);
  close(sv[1]);
}

TEST(RingTest, ClearingAnOutboxCancelsItsQueuedWrite) {
  RING_OR_SKIP(ring);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  Outbox out;
  out.add("never sent");
  Handler h;
  int err = 0;
  EXPECT_EQ(out.flush(sv[0], &err, ring.get(), &h), Outbox::Result::kQueued);
  out.clear();
  EXPECT_TRUE(ring->empty());
  ring->run(always);
  EXPECT_EQ(h.calls, 0);
  char buf[16];
  EXPECT_EQ(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), -1);
  close(sv[0]);
  close(sv[1]);
}

TEST(RingTest, TheLoopRunsQueuedCallsAfterItsEvents) {
  EventLoop loop;
  std::string why;
  if (!loop.enable_ring(&why)) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  // Handlers that, on their socket's readiness, queue a read; the loop makes both in one
  // enter before it waits again, and drives each handler with its bytes.
  struct Reader : IoHandler {
    EventLoop* loop;
    int fd;
    int* left;
    RingOp op;
    char buf[16];
    std::string got;
    void on_io(uint32_t events) override {
      if (op.done()) {
        int n = op.take();
        if (n > 0) {
          got.append(buf, static_cast<size_t>(n));
          if (--*left == 0) {
            loop->stop();
          }
        }
        return;
      }
      if ((events & EPOLLIN) != 0 && op.idle()) {
        loop->ring()->queue_recv(&op, this, fd, buf, sizeof(buf));
      }
    }
  };
  int left = 2;
  int s1[2], s2[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s1), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s2), 0);
  Reader r1, r2;
  r1.loop = r2.loop = &loop;
  r1.left = r2.left = &left;
  r1.fd = s1[1];
  r2.fd = s2[1];
  ASSERT_TRUE(loop.add(s1[1], &r1));
  ASSERT_TRUE(loop.add(s2[1], &r2));
  ASSERT_EQ(write(s1[0], "hello", 5), 5);
  ASSERT_EQ(write(s2[0], "world", 5), 5);
  loop.run();
  EXPECT_EQ(r1.got, "hello");
  EXPECT_EQ(r2.got, "world");
  EXPECT_EQ(loop.ring()->stats().batched_calls, 2u);
  EXPECT_EQ(loop.ring()->stats().enters, 1u);
  loop.remove(s1[1]);
  loop.remove(s2[1]);
  for (int fd : {s1[0], s1[1], s2[0], s2[1]}) {
    close(fd);
  }
}

// Two sockets, each with `data` waiting to be read.
struct Loaded {
  int a[2], b[2];
  explicit Loaded(const char* data) {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
    put(data);
  }
  void put(const char* data) {
    size_t n = strlen(data);
    EXPECT_EQ(write(a[0], data, n), static_cast<ssize_t>(n));
    EXPECT_EQ(write(b[0], data, n), static_cast<ssize_t>(n));
  }
  ~Loaded() {
    for (int fd : {a[0], a[1], b[0], b[1]}) {
      close(fd);
    }
  }
};

TEST(RingTest, AFailedEnterBreaksTheRingForGood) {
  RING_OR_SKIP(ring);
  Loaded s("first");
  char b1[16] = {}, b2[16] = {};
  RingOp o1, o2;
  Handler h;
  Ring::faults_for_test = {.failures = 1000, .err = ENOMEM};
  ring->queue_recv(&o1, &h, s.a[1], b1, sizeof(b1));
  ring->queue_recv(&o2, &h, s.b[1], b2, sizeof(b2));
  ring->run(always);
  Ring::faults_for_test = {};
  // The calls were made the plain way, and the ring is not used again: its submission
  // entries name this round's buffers and must never run.
  EXPECT_TRUE(ring->broken());
  EXPECT_EQ(o1.take(), 5);
  EXPECT_EQ(o2.take(), 5);
  EXPECT_EQ(std::string(b1, 5), "first");
  EXPECT_EQ(ring->stats().direct_calls, 2u);

  s.put("later");
  char c1[16] = {}, c2[16] = {};
  ring->queue_recv(&o1, &h, s.a[1], c1, sizeof(c1));
  ring->queue_recv(&o2, &h, s.b[1], c2, sizeof(c2));
  ring->run(always);
  EXPECT_EQ(o1.take(), 5);
  EXPECT_EQ(o2.take(), 5);
  EXPECT_EQ(std::string(c1, 5), "later");
  EXPECT_EQ(std::string(c2, 5), "later");
  EXPECT_EQ(std::string(b1, 5), "first") << "a stale submission ran";
  EXPECT_EQ(std::string(b2, 5), "first") << "a stale submission ran";
  EXPECT_EQ(ring->stats().direct_calls, 4u);
}

TEST(RingTest, CreateFailsWhereEnterIsForbidden) {
  std::string why;
  if (!Ring::create(8, &why)) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  // As a seccomp filter that allows only io_uring_setup.
  Ring::faults_for_test = {.failures = 1000, .err = EPERM};
  std::unique_ptr<Ring> r = Ring::create(8, &why);
  Ring::faults_for_test = {};
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(why.find("io_uring_enter"), std::string::npos) << why;
}

TEST(RingTest, CallsNotCompletedInlineAreCancelledAndMadeThePlainWay) {
  RING_OR_SKIP(ring);
  // Without MSG_DONTWAIT io_uring waits for data: what a kernel that ignored the flag would
  // do. run() must not block; it cancels the calls, makes them as plain system calls and
  // stops using the ring.
  ring->set_dontwait_for_test(false);
  Loaded s("");
  char b1[16] = {}, b2[16] = {};
  RingOp o1, o2;
  Handler h;
  ring->queue_recv(&o1, &h, s.a[1], b1, sizeof(b1));
  ring->queue_recv(&o2, &h, s.b[1], b2, sizeof(b2));
  ring->run(always);
  EXPECT_TRUE(ring->broken());
  EXPECT_EQ(o1.take(), -EAGAIN);
  EXPECT_EQ(o2.take(), -EAGAIN);
  EXPECT_EQ(h.calls, 2);
  // The cancelled reads are gone: bytes sent now stay in the sockets.
  s.put("after");
  char buf[16];
  EXPECT_EQ(recv(s.a[1], buf, sizeof(buf), MSG_DONTWAIT), 5);
  EXPECT_EQ(recv(s.b[1], buf, sizeof(buf), MSG_DONTWAIT), 5);
  EXPECT_EQ(b1[0], 0);
  EXPECT_EQ(b2[0], 0);
}

// Four sockets, each holding `data`, with a read of each queued on `ring`.
struct FourReads {
  Loaded one, two;
  int fds[4];
  char bufs[4][8] = {};
  RingOp ops[4];
  Handler h;
  FourReads(Ring& ring, const char* data)
      : one(data), two(data), fds{one.a[1], one.b[1], two.a[1], two.b[1]} {
    for (int i = 0; i < 4; ++i) {
      ring.queue_recv(&ops[i], &h, fds[i], bufs[i], sizeof(bufs[i]));
    }
  }
};

TEST(RingTest, APartialSubmitAndABriefShortageAreNotBreakage) {
  RING_OR_SKIP(ring);
  // The kernel takes one entry an enter, and refuses the second enter with EAGAIN once.
  FourReads r(*ring, "data");
  Ring::faults_for_test = {.ok_before = 1, .failures = 1, .err = EAGAIN, .submit_at_most = 1};
  ring->run(always);
  Ring::faults_for_test = {};
  EXPECT_FALSE(ring->broken());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.ops[i].take(), 4) << i;
    EXPECT_EQ(std::string(r.bufs[i], 4), "data");
  }
  EXPECT_EQ(ring->stats().batched_calls, 4u);
  EXPECT_EQ(ring->stats().direct_calls, 0u);
}

TEST(RingTest, ABreakInTheFirstChunkLeavesNothingToRunTwice) {
  std::string why;
  std::unique_ptr<Ring> ring = Ring::create(8, &why);  // 8 entries: 9 calls make two chunks
  if (!ring) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  constexpr int kCalls = 9;
  std::vector<std::array<int, 2>> sv(kCalls);
  std::vector<std::string> msgs;
  std::vector<iovec> iov(kCalls);
  std::vector<msghdr> mh(kCalls);
  std::vector<RingOp> ops(kCalls);
  Handler h;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv[i].data()), 0);
    msgs.push_back("m" + std::to_string(i) + ";");
  }
  for (int i = 0; i < kCalls; ++i) {
    mh[i] = one_iov(&iov[i], msgs[i]);
    ring->queue_sendmsg(&ops[i], &h, sv[i][0], &mh[i]);
  }
  // Two entries go in, then one enter fails (later ones would work): the ring is broken, and
  // the second chunk must not be submitted behind the first one's leftover entries.
  Ring::faults_for_test = {.ok_before = 1, .failures = 1, .err = ENOMEM, .submit_at_most = 2};
  ring->run(always);
  Ring::faults_for_test = {};
  EXPECT_TRUE(ring->broken());
  // A later round (plain calls now) must not make the first round's leftover entries run.
  std::string more = "x";
  iovec mi;
  msghdr mm = one_iov(&mi, more);
  RingOp a, b;
  ring->queue_sendmsg(&a, &h, sv[0][0], &mm);
  ring->queue_sendmsg(&b, &h, sv[1][0], &mm);
  ring->run(always);
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(ops[i].take(), static_cast<int>(msgs[i].size())) << i;
    char buf[64];
    ssize_t n = recv(sv[i][1], buf, sizeof(buf), MSG_DONTWAIT);
    std::string want = msgs[i] + (i < 2 ? "x" : "");
    ASSERT_GT(n, 0) << i;
    EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), want) << "sent twice or lost: " << i;
    close(sv[i][0]);
    close(sv[i][1]);
  }
}

TEST(RingTest, InFlightCallsAfterAPartialSubmitAreCancelled) {
  RING_OR_SKIP(ring);
  ring->set_dontwait_for_test(false);  // submitted reads wait for data, as in flight
  FourReads r(*ring, "");
  // Two go in (and wait); every later enter is refused: two entries stay in the ring.
  Ring::faults_for_test = {.ok_before = 1, .failures = 1000, .err = EAGAIN, .submit_at_most = 2};
  ring->run(always);  // must return: cancels, no-ops for the rest, plain calls
  Ring::faults_for_test = {};
  EXPECT_TRUE(ring->broken());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.ops[i].take(), -EAGAIN) << i;
  }
  r.one.put("late");
  r.two.put("late");
  char buf[8];
  for (int fd : r.fds) {
    EXPECT_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 4) << "a cancelled read took the bytes";
  }
  for (auto& b : r.bufs) {
    EXPECT_EQ(b[0], 0);
  }
}

}  // namespace
}  // namespace sluice::io
