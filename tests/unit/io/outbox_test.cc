#include "io/outbox.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace sluice::io {
namespace {

TEST(OutboxTest, PartialWritesResumeWhereTheyStopped) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  std::string head = "HEAD|";
  std::string body(1 << 20, 'x');
  for (size_t i = 0; i < body.size(); ++i) {
    body[i] = static_cast<char>('a' + i % 26);
  }
  Outbox out;
  out.add(head);
  out.add(body);
  out.add("|END");
  size_t total = out.pending_bytes();
  EXPECT_EQ(total, head.size() + body.size() + 4);
  std::string received;
  char buf[65536];
  int err = 0;
  int blocked = 0;
  while (true) {
    Outbox::Result r = out.flush(sv[0], &err);
    ASSERT_NE(r, Outbox::Result::kError);
    ssize_t n;
    while ((n = read(sv[1], buf, sizeof(buf))) > 0) {
      received.append(buf, static_cast<size_t>(n));
    }
    if (r == Outbox::Result::kDone) {
      break;
    }
    ++blocked;
  }
  EXPECT_GT(blocked, 0) << "the socket buffer should have filled at least once";
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(received, head + body + "|END");
  close(sv[0]);
  close(sv[1]);
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
