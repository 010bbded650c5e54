// Tunnel over two socket pairs (the client's and the upstream's connection, each with its
// peer held by the test): bytes both ways, the bytes read before the tunnel first, a reader
// that stops reading holding the other side back with the buffers at their cap, half-closes
// passed on, a reset ending it, and the drain's Close frames at a frame boundary.

#include "proxy/tunnel.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "io/event_loop.h"
#include "proxy/ws_frames.h"

namespace sluice::proxy {
namespace {

struct Quiet : io::IoHandler {
  void on_io(uint32_t) override {}
};

// One connection: the transport's end (closed by it) and the peer's end (the test's).
struct Side {
  Side(io::EventLoop& loop, io::IoHandler* h, size_t buffer) {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    t = std::make_unique<io::SocketTransport>(loop, h, sv[0]);
    in.reserve_total(buffer);
  }
  ~Side() {
    if (peer() >= 0) {
      close(peer());
    }
  }
  int peer() const { return sv[1]; }
  void send(std::string_view s) const {
    ASSERT_EQ(::send(peer(), s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size()));
  }
  // What the peer has received so far; `eof` set when the transport's side half-closed.
  std::string recv(bool* eof = nullptr) const {
    std::string got;
    char buf[65536];
    ssize_t n;
    while ((n = ::recv(peer(), buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
      got.append(buf, static_cast<size_t>(n));
    }
    if (eof != nullptr) {
      *eof = n == 0;
    }
    return got;
  }
  TunnelEnd end(size_t max) { return {t.get(), &in, max}; }
  int sv[2] = {-1, -1};
  std::unique_ptr<io::SocketTransport> t;
  io::Buffer in;
};

class TunnelTest : public ::testing::Test {
 protected:
  // Steps the tunnel as edges would drive it: both sides readable and writable again.
  Tunnel::State settle(Tunnel& tun) {
    Tunnel::State s = Tunnel::State::kOpen;
    for (int i = 0; i < 8 && s == Tunnel::State::kOpen; ++i) {
      client.t->on_events(EPOLLIN | EPOLLOUT);
      upstream.t->on_events(EPOLLIN | EPOLLOUT);
      s = tun.step();
    }
    return s;
  }
  io::EventLoop loop;
  Quiet h;
  Side client{loop, &h, 4096};
  Side upstream{loop, &h, 4096};
};

TEST_F(TunnelTest, RelaysBothWaysTheBytesReadBeforeItFirst) {
  std::string early = "early";
  std::memcpy(client.in.write_ptr(), early.data(), early.size());
  client.in.commit(early.size());
  Tunnel tun(client.end(8192), upstream.end(8192), false);
  client.send(" and later");
  upstream.send("from upstream");
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  EXPECT_EQ(upstream.recv(), "early and later");
  EXPECT_EQ(client.recv(), "from upstream");
  EXPECT_EQ(tun.to_upstream(), 15u);
  EXPECT_EQ(tun.to_client(), 13u);
  uint64_t a = tun.activity();
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  EXPECT_EQ(tun.activity(), a) << "nothing moved: an idle timer is not restarted";
}

TEST_F(TunnelTest, AReaderThatStopsHoldsTheOtherSideBackWithBoundedBuffers) {
  int small = 4096;
  setsockopt(client.peer(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  setsockopt(client.sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  Tunnel tun(client.end(8192), upstream.end(8192), false);
  // The upstream sends until its own socket is full; the client's peer reads nothing.
  std::string chunk(16384, 'x');
  size_t sent = 0;
  for (int round = 0; round < 64; ++round) {
    ssize_t n = ::send(upstream.peer(), chunk.data(), chunk.size(), MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    }
    settle(tun);
  }
  uint64_t relayed = tun.to_client();
  EXPECT_LT(relayed, sent) << "everything was relayed: nothing pushed back";
  EXPECT_LE(upstream.in.capacity(), 8192u) << "the buffer grew past its cap";
  EXPECT_LE(upstream.in.size(), 8192u);
  ssize_t more = ::send(upstream.peer(), chunk.data(), chunk.size(), MSG_DONTWAIT);
  EXPECT_LT(more, 0) << "the upstream could still send: its window never closed";
  // The client reads: everything arrives, in order.
  std::string got;
  for (int i = 0; i < 400 && got.size() < sent; ++i) {
    got += client.recv();
    settle(tun);
  }
  EXPECT_EQ(got.size(), sent);
  EXPECT_EQ(got, std::string(sent, 'x'));
}

TEST_F(TunnelTest, HalfClosesArePassedOnAndBothEndIt) {
  Tunnel tun(client.end(8192), upstream.end(8192), false);
  client.send("last words");
  ASSERT_EQ(shutdown(client.peer(), SHUT_WR), 0);
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  bool eof = false;
  EXPECT_EQ(upstream.recv(&eof), "last words");
  EXPECT_TRUE(eof) << "the client's half-close did not reach the upstream";
  upstream.send("the answer still flows");
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  EXPECT_EQ(client.recv(&eof), "the answer still flows");
  EXPECT_FALSE(eof);
  ASSERT_EQ(shutdown(upstream.peer(), SHUT_WR), 0);
  EXPECT_EQ(settle(tun), Tunnel::State::kDone);
  client.recv(&eof);
  EXPECT_TRUE(eof);
}

TEST_F(TunnelTest, AResetEndsIt) {
  Tunnel tun(client.end(8192), upstream.end(8192), false);
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  client.send("x");  // unread by the upstream's peer: its close resets the connection
  settle(tun);
  close(upstream.peer());
  upstream.sv[1] = -1;
  EXPECT_EQ(settle(tun), Tunnel::State::kFailed);
  EXPECT_FALSE(tun.error().empty());
}

// A transport that takes the bytes out of the Outbox at once and sends them later, as the TLS
// transport does (its records): a write may say kQueued with the Outbox already empty.
class TakingTransport final : public io::Transport {
 public:
  explicit TakingTransport(io::SocketTransport& sock) : sock_(sock) {}
  void on_events(uint32_t events) override { sock_.on_events(events); }
  Read read(io::Buffer& b, size_t max) override { return sock_.read(b, max); }
  io::Outbox::Result write(io::Outbox& out, int* err) override {
    if (taken_.empty()) {
      for (int i = 0; i < out.pending_count(); ++i) {
        const iovec& v = out.pending_at(i);
        taken_.append(static_cast<const char*>(v.iov_base), v.iov_len);
      }
      out.consume(out.pending_bytes());
      if (!taken_.empty()) {
        return io::Outbox::Result::kQueued;  // "sent with the loop's next batch"
      }
    }
    ssize_t n = ::send(sock_.fd(), taken_.data(), taken_.size(), MSG_NOSIGNAL);
    EXPECT_EQ(n, ssize_t(taken_.size()));
    taken_.clear();
    return io::Outbox::Result::kDone;
  }
  void shutdown_write() override { sock_.shutdown_write(); }
  bool cancel_read() override { return sock_.cancel_read(); }
  bool read_pending() const override { return sock_.read_pending(); }
  bool readable() const override { return sock_.readable(); }
  bool writable() const override { return sock_.writable(); }
  bool failed() const override { return sock_.failed(); }

 private:
  io::SocketTransport& sock_;
  std::string taken_;
};

TEST_F(TunnelTest, BytesATransportTookButHasNotSentAreNotHandedToItAgain) {
  TakingTransport taking(*client.t);
  Tunnel tun({&taking, &client.in, 8192}, upstream.end(8192), false);
  upstream.send("once");
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  upstream.send(" and once more");
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  EXPECT_EQ(client.recv(), "once and once more");
}

std::string text_frame(std::string_view payload, bool masked) {
  std::string f = "\x81";
  f.push_back(static_cast<char>((masked ? 0x80 : 0) | payload.size()));
  if (masked) {
    f.append(4, '\0');  // a zero key: the payload reads as sent
  }
  f.append(payload);
  return f;
}

TEST_F(TunnelTest, ThePoliteCloseWaitsForTheFrameInFlightThenSendsCloseFrames) {
  Tunnel tun(client.end(8192), upstream.end(8192), true);
  std::string to_up = text_frame("hello upstream", true);
  std::string to_client = text_frame("hello client", false);
  // Half of a frame each way when the drain begins.
  client.send(std::string_view(to_up).substr(0, 5));
  upstream.send(std::string_view(to_client).substr(0, 5));
  settle(tun);
  tun.close_politely();
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  EXPECT_EQ(upstream.recv(), to_up.substr(0, 5)) << "no Close inside a frame";
  EXPECT_EQ(client.recv(), to_client.substr(0, 5));
  // The frames end (and more frames follow, which the Close overtakes).
  client.send(to_up.substr(5) + text_frame("late", true));
  upstream.send(to_client.substr(5) + text_frame("late", false));
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  bool eof = false;
  std::string got_up = upstream.recv(&eof);
  EXPECT_TRUE(eof);
  ASSERT_EQ(got_up.size(), to_up.size() - 5 + kWsCloseFrameToServerLen);
  EXPECT_EQ(got_up.substr(0, to_up.size() - 5), to_up.substr(5));
  std::string close_up = got_up.substr(to_up.size() - 5);
  EXPECT_EQ(close_up.substr(0, 2), "\x88\x82") << "a masked Close frame";
  EXPECT_EQ(char(close_up[6] ^ close_up[2]), '\x03');
  EXPECT_EQ(char(close_up[7] ^ close_up[3]), '\xe9');
  EXPECT_EQ(client.recv(&eof), to_client.substr(5) + std::string("\x88\x02\x03\xe9", 4));
  EXPECT_TRUE(eof);
  // The peers answer with their Close frames (dropped) and close: the tunnel is done.
  client.send(std::string("\x88\x82\0\0\0\0\x03\xe9", 8));
  upstream.send(std::string("\x88\x02\x03\xe9", 4));
  shutdown(client.peer(), SHUT_WR);
  shutdown(upstream.peer(), SHUT_WR);
  EXPECT_EQ(settle(tun), Tunnel::State::kDone);
}

TEST_F(TunnelTest, APoliteCloseLeavesOtherProtocolsAlone) {
  Tunnel tun(client.end(8192), upstream.end(8192), false);
  tun.close_politely();
  client.send("\x81\x01x");
  EXPECT_EQ(settle(tun), Tunnel::State::kOpen);
  bool eof = false;
  EXPECT_EQ(upstream.recv(&eof), "\x81\x01x");
  EXPECT_FALSE(eof);
}

}  // namespace
}  // namespace sluice::proxy
