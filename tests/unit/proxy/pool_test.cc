// The keep-alive pool: connections come back by their key only, and the idle cap counts per
// node whatever the TLS server names (which clients' Host headers may choose).

#include "proxy/pool.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

namespace sluice::proxy {
namespace {

std::unique_ptr<UpstreamConn> conn(io::EventLoop& loop, const std::string& key) {
  int fds[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[1]);
  return std::make_unique<UpstreamConn>(loop, fds[0], key);
}

TEST(Pool, NodeOfAKey) {
  EXPECT_EQ(Pool::node_of("10.0.0.1:80"), "10.0.0.1:80");
  EXPECT_EQ(Pool::node_of("10.0.0.1:443|api.example|7f00"), "10.0.0.1:443");
  EXPECT_EQ(Pool::node_of("::1:443||7f00"), "::1:443");
}

TEST(Pool, AConnectionServesOnlyItsKey) {
  io::EventLoop loop;
  Pool pool(loop);
  const std::string a = "10.0.0.1:443|a.example|1", b = "10.0.0.1:443|b.example|1";
  auto c = conn(loop, a);
  UpstreamConn* raw = c.get();
  pool.put(std::move(c), 4, 60000);
  EXPECT_EQ(pool.take(b), nullptr);
  EXPECT_EQ(pool.take("10.0.0.1:443"), nullptr);
  auto back = pool.take(a);
  EXPECT_EQ(back.get(), raw);
  EXPECT_EQ(pool.take(a), nullptr);
  EXPECT_EQ(pool.idle_count(), 0u);
}

TEST(Pool, TheIdleCapCountsPerNode) {
  io::EventLoop loop;
  Pool pool(loop);
  // Three names on one node with a cap of 2: the third is closed, not parked.
  for (const char* name : {"a", "b", "c"}) {
    pool.put(conn(loop, std::string("10.0.0.1:443|") + name + "|1"), 2, 60000);
  }
  EXPECT_EQ(pool.idle_count(), 2u);
  EXPECT_EQ(pool.take("10.0.0.1:443|c|1"), nullptr);
  // Another node has its own count.
  pool.put(conn(loop, "10.0.0.2:443|a|1"), 2, 60000);
  EXPECT_EQ(pool.idle_count(), 3u);
  // A connection taken out frees its place for the node.
  ASSERT_NE(pool.take("10.0.0.1:443|a|1"), nullptr);
  pool.put(conn(loop, "10.0.0.1:443|c|1"), 2, 60000);
  EXPECT_NE(pool.take("10.0.0.1:443|c|1"), nullptr);
  pool.clear();
  EXPECT_EQ(pool.idle_count(), 0u);
  loop.bury();
}

TEST(Pool, EmptyListsGoForServerNamesAndStayForNodes) {
  io::EventLoop loop;
  Pool pool(loop);
  // A plain node keeps its (empty) list: the steady take/put cycle allocates nothing.
  pool.put(conn(loop, "10.0.0.1:80"), 4, 60000);
  ASSERT_NE(pool.take("10.0.0.1:80"), nullptr);
  EXPECT_EQ(pool.key_count(), 1u);
  // Server names may come from clients: a name's list goes once empty.
  for (int i = 0; i < 100; ++i) {
    std::string key = "10.0.0.1:443|n" + std::to_string(i) + ".example|1";
    pool.put(conn(loop, key), 4, 60000);
    ASSERT_NE(pool.take(key), nullptr);
  }
  EXPECT_EQ(pool.key_count(), 1u);
  EXPECT_EQ(pool.idle_count(), 0u);
  loop.bury();
}

}  // namespace
}  // namespace sluice::proxy
