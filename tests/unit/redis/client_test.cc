// Client against real redis-server processes on loopback (see redis_harness.h).

#include "redis/client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "unit/redis/redis_harness.h"

namespace sluice::redis {
namespace {

using testing::LoopThread;
using testing::Outcome;
using testing::Recorder;
using testing::RedisServer;

ClientOptions options_for(uint16_t port) {
  ClientOptions o;
  o.host = "127.0.0.1";
  o.port = port;
  return o;
}

// Issues one command on the loop thread and waits for its outcome.
Outcome run(LoopThread& lt, Client& c, Recorder& rec, uint64_t token, std::vector<std::string> args,
            int timeout_ms = 5000) {
  lt.call([&] {
    std::vector<std::string_view> v(args.begin(), args.end());
    c.command(v, rec.cb(token));
  });
  EXPECT_TRUE(lt.wait_until([&] { return rec.done(token); }, timeout_ms)) << args[0];
  return lt.call([&] { return rec.results[token]; });
}

std::string text(const Outcome& o) { return o.ok ? describe(o.reply) : "error: " + o.error; }

// Sends PING until one gets PONG (tokens from `*token` + 1 on); false after `timeout_ms`.
bool eventually_pong(LoopThread& lt, Client& c, Recorder& rec, uint64_t* token,
                     int timeout_ms = 5000) {
  const uint64_t first = *token + 1;
  return lt.wait_until(
      [&] {
        if (rec.done(*token) && rec.results[*token].ok &&
            describe(rec.results[*token].reply) == "PONG") {
          return true;
        }
        if (*token < first || rec.done(*token)) {
          const std::string_view ping[] = {"PING"};
          c.command(ping, rec.cb(++*token));
        }
        return false;
      },
      timeout_ms);
}

// A one-connection server that waits for `expect` bytes of commands, writes `answer` and
// closes.
class FakeServer {
 public:
  FakeServer(size_t expect, std::string answer) : expect_(expect), answer_(std::move(answer)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    io::SockAddr a;
    io::make_sockaddr("127.0.0.1", 0, &a);
    bind(fd_, a.get(), a.len);
    listen(fd_, 4);
    sockaddr_in sin{};
    socklen_t len = sizeof(sin);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sin), &len);
    port_ = ntohs(sin.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    const int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      return;
    }
    size_t got = 0;
    char buf[4096];
    while (got < expect_) {
      const ssize_t n = recv(c, buf, sizeof(buf), 0);
      if (n <= 0) {
        break;
      }
      got += static_cast<size_t>(n);
    }
    send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
    close(c);
  }
  size_t expect_;
  std::string answer_;
  int fd_;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(RedisClientTest, CommandRoundTrip) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"SET", "k", "v"})), "OK");
  EXPECT_EQ(text(run(lt, *c, rec, 2, {"GET", "k"})), "\"v\"");
  EXPECT_EQ(text(run(lt, *c, rec, 3, {"GET", "missing"})), "(nil)");
  EXPECT_EQ(text(run(lt, *c, rec, 4, {"INCRBY", "n", "5"})), "(integer) 5");
  EXPECT_EQ(text(run(lt, *c, rec, 5, {"RPUSH", "l", "a", "b"})), "(integer) 2");
  EXPECT_EQ(text(run(lt, *c, rec, 6, {"LRANGE", "l", "0", "-1"})), "[\"a\", \"b\"]");
  // A Redis error is a reply, not a failure.
  EXPECT_EQ(text(run(lt, *c, rec, 7, {"NOSUCHCOMMAND"})).substr(0, 30),
            "(error) ERR unknown command 'N");
  EXPECT_EQ(server.cli({"GET", "k"}), "v");
  EXPECT_EQ(lt.call([&] { return c->connect_attempts(); }), 1u);
  EXPECT_EQ(lt.call([&] { return c->pending(); }), 0u);
}

TEST(RedisClientTest, PipelinedRepliesComeBackInOrder) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  constexpr int kCount = 500;
  // All issued in one batch, before the connection even exists: one connect, one write.
  lt.call([&] {
    for (int i = 1; i <= kCount; ++i) {
      const std::string_view args[] = {"INCR", "counter"};
      c->command(args, rec.cb(static_cast<uint64_t>(i)));
    }
    EXPECT_EQ(c->pending(), static_cast<size_t>(kCount));
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.order.size() == kCount; }));
  lt.call([&] {
    for (int i = 1; i <= kCount; ++i) {
      EXPECT_EQ(rec.order[static_cast<size_t>(i - 1)], static_cast<uint64_t>(i));
      EXPECT_EQ(rec.results[static_cast<uint64_t>(i)].reply.integer, i);
    }
    EXPECT_EQ(c->connect_attempts(), 1u);
  });
}

TEST(RedisClientTest, CallbacksMayIssueCommands) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  rec.then = [&](uint64_t token, const Outcome&) {
    if (token < 50) {
      const std::string_view args[] = {"INCR", "chain"};
      c->command(args, rec.cb(token + 1));
    }
  };
  run(lt, *c, rec, 1, {"INCR", "chain"});
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(50); }));
  EXPECT_EQ(lt.call([&] { return rec.results[50].reply.integer; }), 50);
}

TEST(RedisClientTest, LargeValuesCrossManyReadsAndWrites) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  std::string big(4 << 20, 'a');
  for (size_t i = 0; i < big.size(); i += 4093) {
    big[i] = static_cast<char>('a' + i % 26);
  }
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"SET", "big", big})), "OK");
  const Outcome got = run(lt, *c, rec, 2, {"GET", "big"});
  ASSERT_TRUE(got.ok);
  EXPECT_TRUE(got.reply.str == big);
}

TEST(RedisClientTest, AuthWithPassword) {
  REQUIRE_REDIS();
  RedisServer server({"--requirepass", "s3cret"});
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.password = "s3cret";
  auto good = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *good, rec, 1, {"PING"})), "PONG");

  o.password = "wrong";
  auto bad = lt.make<Client>(o);
  const Outcome refused = run(lt, *bad, rec, 2, {"PING"});
  EXPECT_EQ(refused.error.substr(0, 22), "AUTH failed: WRONGPASS") << refused.error;

  o.password.reset();
  auto none = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *none, rec, 3, {"PING"})).substr(0, 14), "(error) NOAUTH");
}

TEST(RedisClientTest, AuthWithAclUser) {
  REQUIRE_REDIS();
  RedisServer server;
  ASSERT_EQ(server.cli({"ACL", "SETUSER", "limiter", "on", ">pw1", "~*", "+@all"}), "OK");
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.username = "limiter";
  o.password = "pw1";
  auto good = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *good, rec, 1, {"ACL", "WHOAMI"})), "\"limiter\"");
  o.password = "pw2";
  auto bad = lt.make<Client>(o);
  EXPECT_EQ(run(lt, *bad, rec, 2, {"PING"}).error.substr(0, 22), "AUTH failed: WRONGPASS");
}

TEST(RedisClientTest, SelectsTheDatabase) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.database = 3;
  auto c = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"SET", "dbkey", "three"})), "OK");
  EXPECT_EQ(server.cli({"-n", "3", "GET", "dbkey"}), "three");
  EXPECT_EQ(server.cli({"-n", "0", "EXISTS", "dbkey"}), "0");

  o.database = 999;
  auto bad = lt.make<Client>(o);
  EXPECT_EQ(run(lt, *bad, rec, 2, {"PING"}).error, "SELECT failed: ERR DB index is out of range");
}

TEST(RedisClientTest, EvalShaFallsBackToEvalOnNoScript) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  static const Script script("return redis.call('INCRBY', KEYS[1], ARGV[1])");
  auto eval = [&](uint64_t token) {
    lt.call([&] {
      const std::string_view keys[] = {"evalkey"};
      const std::string_view args[] = {"2"};
      c->eval(script, keys, args, rec.cb(token));
    });
    EXPECT_TRUE(lt.wait_until([&] { return rec.done(token); }));
    return text(lt.call([&] { return rec.results[token]; }));
  };
  ASSERT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(eval(1), "(integer) 2");  // EVALSHA -> NOSCRIPT -> EVAL
  EXPECT_EQ(server.cli({"SCRIPT", "EXISTS", script.sha1()}), "1");
  EXPECT_EQ(eval(2), "(integer) 4");  // EVALSHA finds it
  ASSERT_EQ(server.cli({"SCRIPT", "FLUSH"}), "OK");
  EXPECT_EQ(eval(3), "(integer) 6");  // and falls back again
  const std::string stats = server.cli({"INFO", "commandstats"});
  EXPECT_NE(stats.find("cmdstat_eval:calls=2,"), std::string::npos) << stats;
  EXPECT_NE(stats.find("cmdstat_evalsha:calls=3,"), std::string::npos) << stats;
  EXPECT_EQ(server.cli({"SCRIPT", "LOAD", script.source()}), script.sha1());

  // A script error is the script's reply: not retried, not a failure.
  static const Script broken("return redis.call('NOSUCH')");
  lt.call([&] { c->eval(broken, {}, {}, rec.cb(4)); });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(4); }));
  EXPECT_EQ(lt.call([&] { return rec.results[4].reply.type; }), Reply::Type::kError);
}

TEST(RedisClientTest, TimeoutFailsEveryPendingRequestAndReconnects) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.timeout_ms = 100;
  auto c = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"PING"})), "PONG");
  server.pause();  // SIGSTOP: the connection stays up, nothing answers
  lt.call([&] {
    for (uint64_t t = 2; t <= 4; ++t) {
      const std::string_view args[] = {"PING"};
      c->command(args, rec.cb(t));
    }
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(4); }));
  lt.call([&] {
    for (uint64_t t = 2; t <= 4; ++t) {
      EXPECT_EQ(rec.results[t].error, "timeout");
    }
    EXPECT_FALSE(c->connected());
    EXPECT_EQ(c->pending(), 0u);
  });
  server.resume();
  EXPECT_EQ(text(run(lt, *c, rec, 5, {"PING"})), "PONG");
  EXPECT_EQ(lt.call([&] { return c->connect_attempts(); }), 2u);
}

TEST(RedisClientTest, SlowCommandTimesOutTheCommandsBehindIt) {
  REQUIRE_REDIS();
  RedisServer server({"--enable-debug-command", "yes"});
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.timeout_ms = 100;
  auto c = lt.make<Client>(o);
  lt.call([&] {
    const std::string_view sleep[] = {"DEBUG", "SLEEP", "0.5"};
    const std::string_view ping[] = {"PING"};
    c->command(sleep, rec.cb(1));
    c->command(ping, rec.cb(2));
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(2); }));
  EXPECT_EQ(lt.call([&] { return rec.results[1].error; }), "timeout");
  EXPECT_EQ(lt.call([&] { return rec.results[2].error; }), "timeout");
  uint64_t token = 2;  // once the server wakes up, a new connection works
  EXPECT_TRUE(eventually_pong(lt, *c, rec, &token));
}

TEST(RedisClientTest, MalformedRepliesCloseTheConnection) {
  struct Case {
    std::string answer;
    std::string second;  // what the second of two PINGs gets
  };
  const std::vector<Case> cases = {
      {"+PONG\r\n?\r\n", "protocol error: unknown reply type byte 0x3f"},
      {"+PONG\r\n$999999999\r\n",
       "protocol error: bulk string of 999999999 bytes exceeds the limit of 16777216"},
      {"+PONG\r\n*-5\r\n", "protocol error: invalid array length"},
      {"+PONG\r\n", "connection closed"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.answer);
    const std::string ping = "*1\r\n$4\r\nPING\r\n";
    FakeServer fake(2 * ping.size(), k.answer);
    LoopThread lt;
    Recorder rec;
    auto c = lt.make<Client>(options_for(fake.port()));
    lt.call([&] {
      const std::string_view args[] = {"PING"};
      c->command(args, rec.cb(1));
      c->command(args, rec.cb(2));
    });
    ASSERT_TRUE(lt.wait_until([&] { return rec.done(2); }));
    EXPECT_EQ(lt.call([&] { return text(rec.results[1]); }), "PONG");
    EXPECT_EQ(lt.call([&] { return rec.results[2].error; }), k.second);
    EXPECT_FALSE(lt.call([&] { return c->connected(); }));
  }
}

TEST(RedisClientTest, ServerKilledFailsPendingThenReconnectsWhenBack) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  ClientOptions o = options_for(server.port());
  o.timeout_ms = 10000;
  auto c = lt.make<Client>(o);
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"PING"})), "PONG");
  lt.call([&] {
    const std::string_view block[] = {"BLPOP", "nothing", "0"};
    c->command(block, rec.cb(2));
  });
  ASSERT_TRUE(lt.wait_until([&] {
    return server.cli({"INFO", "clients"}).find("blocked_clients:1") != std::string::npos;
  }));
  server.kill_now();
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(2); }));
  const std::string err = lt.call([&] { return rec.results[2].error; });
  EXPECT_TRUE(err == "connection closed" || err == "connection reset") << err;

  EXPECT_EQ(run(lt, *c, rec, 3, {"PING"}).error, "connection refused");
  ASSERT_TRUE(server.start());
  // Within kReconnectDelayMs commands still fail at once; then a new connect succeeds.
  uint64_t token = 100;
  EXPECT_TRUE(eventually_pong(lt, *c, rec, &token));
}

TEST(RedisClientTest, RefusedConnectFailsFastThenRecovers) {
  REQUIRE_REDIS();
  const uint16_t port = testing::free_port();
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(port));
  // The first failure's callback issues ten more: they fail without a new connect attempt.
  rec.then = [&](uint64_t token, const Outcome&) {
    if (token == 1) {
      for (uint64_t t = 2; t <= 11; ++t) {
        const std::string_view ping[] = {"PING"};
        c->command(ping, rec.cb(t));
      }
    }
  };
  EXPECT_EQ(run(lt, *c, rec, 1, {"PING"}).error, "connection refused");
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(11); }));
  lt.call([&] {
    for (uint64_t t = 2; t <= 11; ++t) {
      EXPECT_EQ(rec.results[t].error, "connection refused");
    }
    EXPECT_EQ(c->connect_attempts(), 1u);
  });
  RedisServer server({}, port);
  ASSERT_TRUE(server.running());
  std::this_thread::sleep_for(std::chrono::milliseconds(Client::kReconnectDelayMs + 50));
  EXPECT_EQ(text(run(lt, *c, rec, 12, {"PING"})), "PONG");
  EXPECT_EQ(lt.call([&] { return c->connect_attempts(); }), 2u);
}

TEST(RedisClientTest, ConnectTimeoutWhenTheServerNeverAnswersTheSyn) {
  // A listener whose accept queue is full (backlog 0, one connection never accepted) drops
  // new SYNs, so a connect to it hangs.
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  io::SockAddr a;
  ASSERT_TRUE(io::make_sockaddr("127.0.0.1", 0, &a));
  ASSERT_EQ(bind(lfd, a.get(), a.len), 0);
  ASSERT_EQ(listen(lfd, 0), 0);
  sockaddr_in sin{};
  socklen_t len = sizeof(sin);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&sin), &len);
  const int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(filler, reinterpret_cast<sockaddr*>(&sin), len), 0);
  {
    LoopThread lt;
    Recorder rec;
    ClientOptions o = options_for(ntohs(sin.sin_port));
    o.connect_timeout_ms = 100;
    o.timeout_ms = 5000;
    auto c = lt.make<Client>(o);
    rec.then = [&](uint64_t token, const Outcome&) {
      if (token == 1) {
        const std::string_view ping[] = {"PING"};
        c->command(ping, rec.cb(2));  // within the reconnect delay: fails at once
      }
    };
    EXPECT_EQ(run(lt, *c, rec, 1, {"PING"}).error, "connect timeout");
    ASSERT_TRUE(lt.wait_until([&] { return rec.done(2); }));
    EXPECT_EQ(lt.call([&] { return rec.results[2].error; }), "connect timeout");
    EXPECT_EQ(lt.call([&] { return c->connect_attempts(); }), 1u);
  }
  close(filler);
  close(lfd);
}

TEST(RedisClientTest, EmptyCommandFailsWithoutDisturbingTheOthers) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  lt.call([&] {
    const std::string_view ping[] = {"PING"};
    c->command(ping, rec.cb(1));
    c->command({}, rec.cb(2));
    c->command(ping, rec.cb(3));
    EXPECT_FALSE(rec.done(2));
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(1) && rec.done(2) && rec.done(3); }));
  lt.call([&] {
    EXPECT_EQ(rec.results[2].error, "empty command");
    EXPECT_EQ(describe(rec.results[1].reply), "PONG");
    EXPECT_EQ(describe(rec.results[3].reply), "PONG");
  });
}

TEST(RedisClientTest, CancelledCallbacksAreNotCalledAndOrderIsKept) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  lt.call([&] {
    const std::string_view a[] = {"SET", "x", "1"};
    const std::string_view b[] = {"GET", "x"};
    c->command(a, rec.cb(7));
    c->command(b, rec.cb(8));
    EXPECT_EQ(c->cancel(7), 1u);
    EXPECT_EQ(c->cancel(7), 0u);
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(8); }));
  lt.call([&] {
    EXPECT_FALSE(rec.done(7));
    EXPECT_EQ(describe(rec.results[8].reply), "\"1\"");
  });
}

TEST(RedisClientTest, DestroyingTheClientDropsPendingCallbacks) {
  REQUIRE_REDIS();
  RedisServer server;
  LoopThread lt;
  Recorder rec;
  auto c = lt.make<Client>(options_for(server.port()));
  EXPECT_EQ(text(run(lt, *c, rec, 1, {"PING"})), "PONG");
  lt.call([&] {
    const std::string_view block[] = {"BLPOP", "nothing", "0"};
    c->command(block, rec.cb(2));
  });
  c.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(lt.call([&] { return rec.done(2); }));
}

TEST(RedisClientTest, UnresolvableHostFailsEveryCommand) {
  LoopThread lt;
  Recorder rec;
  ClientOptions o;
  o.host = "no-such-host.invalid";
  auto c = lt.make<Client>(o);
  lt.call([&] {
    const std::string_view ping[] = {"PING"};
    c->command(ping, rec.cb(1));
    EXPECT_FALSE(rec.done(1)) << "never called from inside command()";
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(1); }));
  EXPECT_EQ(lt.call([&] { return rec.results[1].error; }).substr(0, 48),
            "cannot resolve redis host 'no-such-host.invalid'");
  EXPECT_EQ(lt.call([&] { return c->connect_attempts(); }), 0u);
}

}  // namespace
}  // namespace sluice::redis
