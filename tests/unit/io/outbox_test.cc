#include "io/outbox.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "io/event_loop.h"
#include "io/ring.h"

namespace sluice::io {
namespace {

// A socket pair whose sending side holds only 4 KiB, and an outbox of a head, 1 MiB of a
// pattern and a tail: written in many partial writes.
struct BigWrite {
  int sv[2] = {-1, -1};
  std::string head = "HEAD|";
  std::string body = std::string(1 << 20, 'x');
  Outbox out;
  std::string received;
  BigWrite() {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
    for (size_t i = 0; i < body.size(); ++i) {
      body[i] = static_cast<char>('a' + i % 26);
    }
    out.add(head);
    out.add(body);
    out.add("|END");
  }
  ~BigWrite() {
    close(sv[0]);
    close(sv[1]);
  }
  // Reads what the socket holds.
  void drain() {
    char buf[65536];
    ssize_t n;
    while ((n = read(sv[1], buf, sizeof(buf))) > 0) {
      received.append(buf, static_cast<size_t>(n));
    }
  }
  std::string expected() const { return head + body + "|END"; }
};

TEST(OutboxTest, PartialWritesResumeWhereTheyStopped) {
  BigWrite w;
  EXPECT_EQ(w.out.pending_bytes(), w.expected().size());
  int err = 0;
  int blocked = 0;
  while (true) {
    Outbox::Result r = w.out.flush(w.sv[0], &err);
    ASSERT_NE(r, Outbox::Result::kError);
    w.drain();
    if (r == Outbox::Result::kDone) {
      break;
    }
    ++blocked;
  }
  EXPECT_GT(blocked, 0) << "the socket buffer should have filled at least once";
  EXPECT_TRUE(w.out.empty());
  EXPECT_EQ(w.received, w.expected());
}

struct NopHandler : IoHandler {
  int calls = 0;
  void on_io(uint32_t) override { ++calls; }
};

TEST(OutboxTest, PartialWritesThroughTheRingResumeWhereTheyStopped) {
  std::string why;
  std::unique_ptr<Ring> ring = Ring::create(64, &why);
  if (!ring) {
    GTEST_SKIP() << "io_uring is not usable here: " << why;
  }
  BigWrite w;
  // Each round also reads an empty socket, so that the write goes through io_uring rather
  // than the one-call shortcut.
  int idle[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, idle), 0);
  RingOp other;
  char scratch;
  NopHandler h, other_h;
  auto always = [](IoHandler*) { return true; };
  int err = 0;
  int queued = 0, blocked = 0;
  while (true) {
    Outbox::Result r = w.out.flush(w.sv[0], &err, ring.get(), &h);
    ASSERT_NE(r, Outbox::Result::kError) << err;
    if (r == Outbox::Result::kDone) {
      break;
    }
    if (r == Outbox::Result::kQueued) {
      ++queued;
      EXPECT_EQ(w.out.flush(w.sv[0], &err, ring.get(), &h), Outbox::Result::kQueued);
      ring->queue_recv(&other, &other_h, idle[1], &scratch, 1);
      ring->run(always);
      EXPECT_EQ(other.take(), -EAGAIN);
      continue;
    }
    ASSERT_EQ(r, Outbox::Result::kBlocked);
    ++blocked;
    w.drain();
  }
  w.drain();
  EXPECT_GT(blocked, 0) << "the socket buffer should have filled at least once";
  EXPECT_GT(queued, blocked);
  EXPECT_EQ(h.calls, queued);
  EXPECT_TRUE(w.out.empty());
  EXPECT_EQ(w.received, w.expected());
  EXPECT_EQ(ring->stats().batched_calls, 2u * static_cast<uint64_t>(queued));
  EXPECT_EQ(ring->stats().direct_calls, 0u);
  close(idle[0]);
  close(idle[1]);
}

TEST(OutboxTest, ErrorIsReportedWhenPeerIsGone) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  close(sv[1]);
  Outbox out;
  out.add("data");
  int err = 0;
  EXPECT_EQ(out.flush(sv[0], &err), Outbox::Result::kError);
  EXPECT_EQ(err, EPIPE);
  close(sv[0]);
}

}  // namespace
}  // namespace sluice::io
