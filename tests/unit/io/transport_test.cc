// SocketTransport over a socket pair: reads into a Buffer (growing to its cap), EOF and reset
// told apart, vectored writes that block and resume, half-close, and the same reads queued on
// the loop's io_uring ring.

#include "io/transport.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "io/event_loop.h"
#include "io/ring.h"

namespace sluice::io {
namespace {

struct DriveCount : IoHandler {
  int calls = 0;
  void on_io(uint32_t) override { ++calls; }
};

// sv[0] is the transport's (it closes it); sv[1] is the peer's.
struct SockPair {
  int sv[2] = {-1, -1};
  SockPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0); }
  ~SockPair() {
    if (sv[1] >= 0) {
      close(sv[1]);
    }
  }
  void send(std::string_view s) {
    ASSERT_EQ(::send(sv[1], s.data(), s.size(), 0), ssize_t(s.size()));
  }
  std::string drain() {
    std::string got;
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
};

TEST(SocketTransport, ReadsWhatArrivedThenWaitsForTheNextEdge) {
  EventLoop loop;
  DriveCount h;
  SockPair p;
  SocketTransport t(loop, &h, p.sv[0]);
  Buffer b;
  b.reserve_total(64);
  EXPECT_EQ(t.read(b, 1024), Transport::Read::kWait);  // nothing yet: EAGAIN
  EXPECT_FALSE(t.readable());
  p.send("hello");
  EXPECT_EQ(t.read(b, 1024), Transport::Read::kWait) << "no edge seen: no read made";
  t.on_events(EPOLLIN);
  EXPECT_EQ(t.read(b, 1024), Transport::Read::kData);
  EXPECT_EQ(b.view(), "hello");
  EXPECT_FALSE(t.readable()) << "a short read drained the socket";
}

TEST(SocketTransport, GrowsTheBufferToItsCapAndNoFurther) {
  EventLoop loop;
  DriveCount h;
  SockPair p;
  SocketTransport t(loop, &h, p.sv[0]);
  Buffer b;
  b.reserve_total(16);
  p.send(std::string(100, 'x'));
  t.on_events(EPOLLIN);
  while (t.read(b, 64) == Transport::Read::kData) {
  }
  EXPECT_EQ(b.size(), 64u);
  EXPECT_EQ(b.capacity(), 64u);
  EXPECT_TRUE(t.readable()) << "bytes are still waiting for the consumer to drain";
  b.consume(64);
  EXPECT_EQ(t.read(b, 64), Transport::Read::kData);
  EXPECT_EQ(b.size(), 36u);
}

TEST(SocketTransport, EofAfterTheDataAndACleanFinIsNotAFailure) {
  EventLoop loop;
  DriveCount h;
  SockPair p;
  SocketTransport t(loop, &h, p.sv[0]);
  Buffer b;
  b.reserve_total(64);
  p.send("last");
  shutdown(p.sv[1], SHUT_WR);
  t.on_events(EPOLLIN | EPOLLRDHUP);
  EXPECT_TRUE(t.fin());
  EXPECT_EQ(t.read(b, 64), Transport::Read::kData);
  EXPECT_TRUE(t.readable()) << "the FIN is queued behind the data: read again";
  EXPECT_EQ(t.read(b, 64), Transport::Read::kEof);
  EXPECT_EQ(b.view(), "last");
  EXPECT_TRUE(t.hangup());
  EXPECT_FALSE(t.failed());
}

TEST(SocketTransport, AResetIsAFailedEof) {
  // A TCP pair on loopback whose peer closes with SO_LINGER 0: an RST, not a FIN.
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ASSERT_EQ(listen(lfd, 1), 0);
  int peer = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(peer, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int ours = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
  ASSERT_GE(ours, 0);
  close(lfd);
  linger lg{1, 0};
  setsockopt(peer, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(peer);
  EventLoop loop;
  DriveCount h;
  SocketTransport t(loop, &h, ours);
  Buffer b;
  b.reserve_total(64);
  t.on_events(EPOLLIN | EPOLLHUP | EPOLLERR);
  EXPECT_EQ(t.read(b, 64), Transport::Read::kEof);
  EXPECT_TRUE(t.hangup());
  EXPECT_TRUE(t.failed()) << "a reset must not pass for a clean end of a body read until close";
}

TEST(SocketTransport, WritesBlockAndResumeAndHalfClose) {
  EventLoop loop;
  DriveCount h;
  SockPair p;
  int small = 4096;
  setsockopt(p.sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  SocketTransport t(loop, &h, p.sv[0]);
  std::string body(1 << 20, 'b');
  Outbox out;
  out.add("head|");
  out.add(body);
  std::string got;
  int err = 0;
  int blocked = 0;
  while (true) {
    ASSERT_TRUE(t.writable());
    Outbox::Result r = t.write(out, &err);
    ASSERT_NE(r, Outbox::Result::kError) << err;
    got += p.drain();
    if (r == Outbox::Result::kDone) {
      break;
    }
    ASSERT_EQ(r, Outbox::Result::kBlocked);
    EXPECT_FALSE(t.writable());
    ++blocked;
    t.on_events(EPOLLOUT);
  }
  EXPECT_GT(blocked, 0);
  EXPECT_EQ(got, "head|" + body);
  t.shutdown_write();
  char c;
  EXPECT_EQ(::recv(p.sv[1], &c, 1, MSG_DONTWAIT), 0) << "the peer reads EOF after a half-close";
}

TEST(SocketTransport, ReadsQueuedOnTheRingCompleteInTheBatch) {
  EventLoop loop;
  std::string why;
  if (!loop.enable_ring(&why)) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  DriveCount h;
  SockPair p;
  SocketTransport t(loop, &h, p.sv[0]);
  Buffer b;
  b.reserve_total(64);
  p.send("ring");
  EXPECT_EQ(t.read(b, 64), Transport::Read::kWait) << "queued, not made";
  EXPECT_TRUE(t.read_pending());
  EXPECT_EQ(t.read(b, 64), Transport::Read::kWait) << "one read at a time";
  loop.ring()->run([](IoHandler*) { return true; });
  EXPECT_EQ(h.calls, 1) << "the handler is driven once the result is in";
  EXPECT_EQ(t.read(b, 64), Transport::Read::kData);
  EXPECT_EQ(b.view(), "ring");
  EXPECT_FALSE(t.read_pending());
}

TEST(SocketTransport, CancelReadSaysWhetherACompletedReadBroughtSomething) {
  EventLoop loop;
  std::string why;
  if (!loop.enable_ring(&why)) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  DriveCount h;
  SockPair p;
  SocketTransport t(loop, &h, p.sv[0]);
  Buffer b;
  b.reserve_total(64);
  // A read that found nothing (EAGAIN) leaves a pooled connection clean.
  EXPECT_EQ(t.read(b, 64), Transport::Read::kWait);
  loop.ring()->run([](IoHandler*) { return true; });
  EXPECT_FALSE(t.cancel_read());
  // One that brought bytes does not.
  t.on_events(EPOLLIN);
  p.send("stray");
  EXPECT_EQ(t.read(b, 64), Transport::Read::kWait);
  loop.ring()->run([](IoHandler*) { return true; });
  EXPECT_TRUE(t.cancel_read());
  EXPECT_FALSE(t.read_pending());
}

}  // namespace
}  // namespace sluice::io
