// The exchange's upgrade: which requests pass their Upgrade on (enable_websocket, HTTP/1.1,
// no body, the `upgrade` connection option), the 101 relayed, then a real tunnel between two
// socket pairs (the client's and the node's connection): bytes both ways, the log phase with
// 101 when it ends, the idle timeout (timeout.read) and the drain's Close frames.

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "unit/server/exchange_fakes.h"

namespace sluice::server {
namespace {

// A new exchange, upstream and downstream for the next case.
class UpgradeTest : public ExchangeTest {
 protected:
  void fresh() {
    ex_ = std::make_unique<Exchange>(
        worker_, std::unique_ptr<proxy::UpstreamRequest>(up_ = new FakeUpstream));
    down_ = FakeDownstream{};
  }
};

constexpr const char* kUpgradeRequest =
    "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

TEST_F(UpgradeTest, UpgradeGoesUpOnlyOnAWebSocketRoute) {
  serve(1, 0);
  up_->tries.push_back({});
  begin(kUpgradeRequest);
  EXPECT_EQ(run(), Exchange::Step::kDone);
  std::string h = up_->heads[0];
  EXPECT_EQ(h.find("Upgrade"), std::string::npos) << h;
  EXPECT_EQ(h.find("Connection"), std::string::npos) << h;
  EXPECT_NE(h.find("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"), std::string::npos) << h;

  fresh();
  serve(1, 0, nullptr, true);
  up_->tries.push_back({});
  begin(kUpgradeRequest);
  EXPECT_EQ(run(), Exchange::Step::kDone);
  h = up_->heads[0];
  EXPECT_NE(h.find("Upgrade: websocket\r\nConnection: upgrade\r\n"), std::string::npos) << h;
  EXPECT_EQ(down_.status, 200) << "an upstream that does not switch answers as usual";
  EXPECT_EQ(down_.upgrade_to, "");
}

TEST_F(UpgradeTest, OnlyAnHttp11RequestWithoutABodyThatNamesTheOptionUpgrades) {
  const char* requests[] = {
      "GET /hello HTTP/1.0\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
      "GET /hello HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",
      "GET /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n\r\n",
  };
  for (const char* raw : requests) {
    fresh();
    serve(1, 0, nullptr, true);
    up_->tries.push_back({});
    begin(raw);
    EXPECT_EQ(run(), Exchange::Step::kDone) << raw;
    EXPECT_EQ(up_->heads[0].find("Upgrade"), std::string::npos) << up_->heads[0];
  }
  fresh();
  serve(1, 0, nullptr, true);
  up_->tries.push_back({});
  down_.body_in = {"abc"};
  begin(
      "POST /hello HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
      "Content-Length: 3\r\n\r\n");
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(up_->heads[0].find("Upgrade"), std::string::npos) << up_->heads[0];
}

struct Quiet : io::IoHandler {
  void on_io(uint32_t) override {}
};

// A connection for the tunnel: the transport's end and the test's (the peer's) end.
struct Conn {
  explicit Conn(io::EventLoop& loop) {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    t = std::make_unique<io::SocketTransport>(loop, &h, sv[0]);
    in.reserve_total(4096);
  }
  ~Conn() { close(sv[1]); }
  proxy::TunnelEnd end() { return {t.get(), &in, 8192}; }
  void send(std::string_view s) const {
    ASSERT_EQ(::send(sv[1], s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size()));
  }
  std::string recv(bool* eof = nullptr) const {
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
      got.append(buf, static_cast<size_t>(n));
    }
    if (eof != nullptr) {
      *eof = n == 0;
    }
    return got;
  }
  void edges() { t->on_events(EPOLLIN | EPOLLOUT); }
  Quiet h;
  int sv[2] = {-1, -1};
  std::unique_ptr<io::SocketTransport> t;
  io::Buffer in;
};

class TunnelExchangeTest : public ExchangeTest {
 protected:
  // Serves a WebSocket route with `plugin`, and has the node answer the upgrade with 101.
  void upgrade(std::shared_ptr<const plugin::Plugin> plugin = nullptr) {
    serve(1, 0, std::move(plugin), true);
    up_->tries.push_back(
        {.status = 101, .fields = {{"Upgrade", "websocket"}, {"Sec-WebSocket-Accept", "s3p"}}});
    down_.tunnel_end = client_.end();
    up_->tunnel_end = node_.end();
    worker_.loop().update_time();  // the timers count from now
    begin(kUpgradeRequest);
  }
  Exchange::Step drive() {
    client_.edges();
    node_.edges();
    return run();
  }
  // Fires the timers due `after_ms` after the upgrade began.
  void fire_timers(uint64_t after_ms) {
    worker_.loop().timers().run_due(worker_.loop().now_ms() + after_ms);
  }
  Conn client_{worker_.loop()};
  Conn node_{worker_.loop()};
};

TEST_F(TunnelExchangeTest, A101BecomesATunnelAndItsConnectionIsNeverPooled) {
  upgrade();
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  EXPECT_EQ(down_.status, 101);
  EXPECT_EQ(down_.upgrade_to, "websocket");
  EXPECT_EQ(down_.field("Sec-WebSocket-Accept"), "s3p");
  EXPECT_EQ(down_.upgrades, 1);
  client_.send("ping from client");
  node_.send("pong from node");
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  EXPECT_EQ(node_.recv(), "ping from client");
  EXPECT_EQ(client_.recv(), "pong from node");
  EXPECT_TRUE(ex_->active());
  shutdown(client_.sv[1], SHUT_WR);
  shutdown(node_.sv[1], SHUT_WR);
  EXPECT_EQ(drive(), Exchange::Step::kClose);
  EXPECT_FALSE(ex_->active());
  EXPECT_EQ(up_->released, 1);
  EXPECT_EQ(up_->released_reusable, 0) << "a tunnel's connection is never pooled";
}

TEST_F(TunnelExchangeTest, APluginsRefusalAnswersTheUpgradeBeforeAnyTunnel) {
  auto plugin = std::make_shared<TestPlugin>(TestPlugin::Mode::kReject);
  serve(1, 0, plugin, true);
  begin(kUpgradeRequest);
  EXPECT_EQ(run(), Exchange::Step::kDone);
  EXPECT_EQ(down_.status, 429) << "a refusal answers before any tunnel";
  EXPECT_EQ(down_.upgrades, 0);
  EXPECT_TRUE(up_->keys.empty());
}

class LogOnly final : public plugin::Plugin {
 public:
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kLog); }
  void log(plugin::Context& ctx) const override {
    ++logs;
    status = ctx.status;
  }
  mutable int logs = 0, status = 0;
};

TEST_F(TunnelExchangeTest, ATunnelIsLoggedOnceWithStatus101WhenItCloses) {
  auto plugin = std::make_shared<LogOnly>();
  upgrade(plugin);
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  EXPECT_EQ(plugin->logs, 0) << "logged while the tunnel still runs";
  shutdown(client_.sv[1], SHUT_WR);
  shutdown(node_.sv[1], SHUT_WR);
  EXPECT_EQ(drive(), Exchange::Step::kClose);
  EXPECT_EQ(plugin->logs, 1);
  EXPECT_EQ(plugin->status, 101);
}

TEST_F(TunnelExchangeTest, ASilentTunnelClosesAfterTheReadTimeout) {
  upgrade();
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  fire_timers(30000);
  EXPECT_EQ(drive(), Exchange::Step::kWait) << "closed before timeout.read (60 s) passed";
  fire_timers(60000);
  EXPECT_EQ(drive(), Exchange::Step::kClose);
  EXPECT_EQ(up_->released, 1);
}

TEST_F(TunnelExchangeTest, TheDrainSendsCloseFramesBeforeItsDeadline) {
  upgrade();
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  // 1.8 s left: the Close frames go at half of it (kTunnelCloseLeadMs caps the lead at 1 s).
  ex_->on_drain(1800);
  fire_timers(800);
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  EXPECT_EQ(client_.recv(), "") << "the Close came before half the drain time";
  fire_timers(900);
  EXPECT_EQ(drive(), Exchange::Step::kWait);
  bool eof = false;
  EXPECT_EQ(client_.recv(&eof), std::string("\x88\x02\x03\xe9", 4));
  EXPECT_TRUE(eof);
  std::string to_node = node_.recv(&eof);
  EXPECT_EQ(to_node.substr(0, 2), "\x88\x82");
  EXPECT_TRUE(eof);
  fire_timers(1000);
  EXPECT_EQ(drive(), Exchange::Step::kClose) << "still open a lead after the Close frames";
}

}  // namespace
}  // namespace sluice::server
