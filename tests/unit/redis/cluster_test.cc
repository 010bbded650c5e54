// ClusterClient against a real three-node Redis Cluster on loopback (see redis_harness.h).

#include "redis/cluster.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redis/slot.h"
#include "unit/redis/redis_harness.h"

namespace sluice::redis {
namespace {

using testing::LoopThread;
using testing::Outcome;
using testing::Recorder;
using testing::RedisServer;

TEST(RedisSlotTest, Crc16MatchesRedisDocumentedExample) {
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(RedisSlotTest, HashTags) {
  struct Case {
    std::string_view key;
    std::string_view hashed;  // the part that decides the slot
  };
  const std::vector<Case> cases = {
      {"foo", "foo"},
      {"{user1000}.following", "user1000"},
      {"{user1000}.followers", "user1000"},
      {"foo{}{bar}", "foo{}{bar}"},  // the first {} is empty: the whole key
      {"foo{{bar}}zap", "{bar"},
      {"foo{bar}{zap}", "bar"},
      {"{}", "{}"},
      {"x{", "x{"},
      {"}{a}", "a"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(key_slot(c.key), crc16(c.hashed) % kClusterSlots) << c.key;
  }
  EXPECT_EQ(key_slot("foo"), 12182);  // as CLUSTER KEYSLOT answers
  EXPECT_EQ(key_slot("bar"), 5061);
}

TEST(RedisSlotTest, SplitHostPort) {
  struct Case {
    std::string_view text;
    bool ok;
    std::string host;
    uint16_t port;
  };
  const std::vector<Case> cases = {
      {"127.0.0.1:7000", true, "127.0.0.1", 7000},
      {"[::1]:6379", true, "::1", 6379},
      {"redis.local:1", true, "redis.local", 1},
      {":6380", true, "", 6380},
      {"127.0.0.1", false, "", 0},
      {"127.0.0.1:0", false, "", 0},
      {"127.0.0.1:65536", false, "", 0},
      {"127.0.0.1:x", false, "", 0},
      {"127.0.0.1:", false, "", 0},
  };
  for (const Case& c : cases) {
    std::string host;
    uint16_t port = 0;
    EXPECT_EQ(split_host_port(c.text, &host, &port), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(host, c.host);
      EXPECT_EQ(port, c.port);
    }
  }
}

// Three masters: 0-5460, 5461-10922, 10923-16383.
class RedisClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_redis()) {
      GTEST_FAIL() << "/usr/bin/redis-server or redis-cli is not installed (scripts/setup)";
    }
    const char* ranges[3][2] = {{"0", "5460"}, {"5461", "10922"}, {"10923", "16383"}};
    for (int i = 0; i < 3; ++i) {
      nodes_.push_back(std::make_unique<RedisServer>(std::vector<std::string>{}, 0, true));
      ASSERT_TRUE(nodes_.back()->running());
      ASSERT_EQ(nodes_.back()->cli({"CLUSTER", "ADDSLOTSRANGE", ranges[i][0], ranges[i][1]}), "OK");
    }
    for (int i = 1; i < 3; ++i) {
      ASSERT_EQ(nodes_[0]->cli({"CLUSTER", "MEET", "127.0.0.1", port(i)}), "OK");
    }
    for (int attempt = 0; attempt < 1500 && !all_ok(); ++attempt) {
      usleep(10 * 1000);
    }
    ASSERT_TRUE(all_ok()) << "cluster_state never became ok";
    for (auto& n : nodes_) {
      ids_.push_back(n->cli({"CLUSTER", "MYID"}));
    }
  }

  bool all_ok() {
    for (auto& n : nodes_) {
      const std::string info = n->cli({"CLUSTER", "INFO"});
      if (info.find("cluster_state:ok") == std::string::npos ||
          info.find("cluster_known_nodes:3") == std::string::npos) {
        return false;
      }
    }
    for (auto& n : nodes_) {  // every node sees every other node's slots
      const std::string slots = n->cli({"CLUSTER", "SLOTS"});
      for (int i = 0; i < 3; ++i) {
        if (slots.find(port(i)) == std::string::npos) {
          return false;
        }
      }
    }
    return true;
  }

  std::string port(int i) const { return std::to_string(nodes_[i]->port()); }
  std::string name(int i) const { return "127.0.0.1:" + port(i); }
  static int owner(uint16_t slot) { return slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2; }

  // A key whose slot belongs to node `i`, different for each `n`.
  static std::string key_on(int i, int n) {
    for (int k = 0;; ++k) {
      std::string key =
          "key" + std::to_string(i) + "-" + std::to_string(n) + "-" + std::to_string(k);
      if (owner(key_slot(key)) == i) {
        return key;
      }
    }
  }

  Outcome run(LoopThread& lt, ClusterClient& c, uint64_t token, std::vector<std::string> args) {
    lt.call([&] {
      std::vector<std::string_view> v(args.begin(), args.end());
      c.command(v, rec_.cb(token));
    });
    EXPECT_TRUE(lt.wait_until([&] { return rec_.done(token); })) << args[0];
    return lt.call([&] { return rec_.results[token]; });
  }

  ClusterOptions seeds(std::vector<int> which) {
    ClusterOptions o;
    for (int i : which) {
      o.seeds.push_back(name(i));
    }
    return o;
  }

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::string> ids_;
  Recorder rec_;
};

TEST_F(RedisClusterTest, KeySlotsAgreeWithTheServer) {
  for (std::string key : {"foo", "bar", "{user1000}.following", "foo{}{bar}", "a", "hello"}) {
    EXPECT_EQ(nodes_[0]->cli({"CLUSTER", "KEYSLOT", key}), std::to_string(key_slot(key))) << key;
  }
}

TEST_F(RedisClusterTest, RoutesKeysToTheNodesThatOwnThem) {
  LoopThread lt;
  auto c = lt.make<ClusterClient>(seeds({0}));  // one seed: the map tells of the others
  uint64_t token = 0;
  for (int i = 0; i < 3; ++i) {
    for (int n = 0; n < 3; ++n) {
      const std::string key = key_on(i, n);
      const Outcome o = run(lt, *c, ++token, {"SET", key, "v" + std::to_string(i)});
      EXPECT_TRUE(o.ok && describe(o.reply) == "OK") << o.error << describe(o.reply);
      // Read back on the owner without redirection: it is really stored there.
      EXPECT_EQ(nodes_[i]->cli({"GET", key}), "v" + std::to_string(i)) << key;
    }
  }
  lt.call([&] {
    EXPECT_EQ(c->slot_map_loads(), 1u);
    EXPECT_EQ(c->node_for_slot(0), name(0));
    EXPECT_EQ(c->node_for_slot(5461), name(1));
    EXPECT_EQ(c->node_for_slot(16383), name(2));
  });

  static const Script incr("return redis.call('INCRBY', KEYS[1], ARGV[1])");
  const std::string key = key_on(2, 9);
  lt.call([&] {
    const std::string_view keys[] = {key};
    const std::string_view args[] = {"3"};
    c->eval(incr, keys, args, rec_.cb(100));
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec_.done(100); }));
  EXPECT_EQ(lt.call([&] { return describe(rec_.results[100].reply); }), "(integer) 3");
  EXPECT_EQ(nodes_[2]->cli({"GET", key}), "3");
}

TEST_F(RedisClusterTest, FollowsAskDuringMigrationAndMovedAfterIt) {
  LoopThread lt;
  auto c = lt.make<ClusterClient>(seeds({0, 1, 2}));
  const std::string key = key_on(0, 42);
  const std::string slot = std::to_string(key_slot(key));
  EXPECT_EQ(describe(run(lt, *c, 1, {"PING"}).reply), "PONG");  // loads the map

  // Slot moves from node 0 to node 1; the key does not exist yet, so node 0 answers ASK.
  ASSERT_EQ(nodes_[1]->cli({"CLUSTER", "SETSLOT", slot, "IMPORTING", ids_[0]}), "OK");
  ASSERT_EQ(nodes_[0]->cli({"CLUSTER", "SETSLOT", slot, "MIGRATING", ids_[1]}), "OK");
  const Outcome asked = run(lt, *c, 2, {"SET", key, "moved-value"});
  EXPECT_EQ(describe(asked.reply), "OK") << asked.error;
  EXPECT_EQ(nodes_[1]->cli({"CLUSTER", "COUNTKEYSINSLOT", slot}), "1");
  EXPECT_EQ(nodes_[0]->cli({"CLUSTER", "COUNTKEYSINSLOT", slot}), "0");
  EXPECT_EQ(lt.call([&] { return c->node_for_slot(key_slot(key)); }), name(0))
      << "ASK does not change the map";

  // The migration ends: node 0 now answers MOVED, which moves the slot in the client's map.
  for (int i : {1, 0, 2}) {
    ASSERT_EQ(nodes_[i]->cli({"CLUSTER", "SETSLOT", slot, "NODE", ids_[1]}), "OK");
  }
  const Outcome moved = run(lt, *c, 3, {"GET", key});
  EXPECT_EQ(describe(moved.reply), "\"moved-value\"") << moved.error;
  EXPECT_EQ(lt.call([&] { return c->node_for_slot(key_slot(key)); }), name(1));
  EXPECT_EQ(nodes_[1]->cli({"GET", key}), "moved-value");
}

TEST(RedisClusterClientTest, UnreachableSeedsFailWithAClearError) {
  const uint16_t port = testing::free_port();
  LoopThread lt;
  Recorder rec;
  ClusterOptions o;
  o.seeds = {"127.0.0.1:" + std::to_string(port)};
  auto c = lt.make<ClusterClient>(o);
  lt.call([&] {
    const std::string_view args[] = {"GET", "k"};
    c->command(args, rec.cb(1));
    EXPECT_FALSE(rec.done(1));
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(1); }));
  EXPECT_EQ(lt.call([&] { return rec.results[1].error; }),
            "cluster: no slot map from 127.0.0.1:" + std::to_string(port) + ": connection refused");
}

TEST(RedisClusterClientTest, InvalidSeedFailsEveryCommand) {
  LoopThread lt;
  Recorder rec;
  ClusterOptions o;
  o.seeds = {"nope"};
  auto c = lt.make<ClusterClient>(o);
  lt.call([&] {
    const std::string_view args[] = {"GET", "k"};
    c->command(args, rec.cb(1));
    EXPECT_FALSE(rec.done(1)) << "never called from inside command()";
  });
  ASSERT_TRUE(lt.wait_until([&] { return rec.done(1); }));
  EXPECT_EQ(lt.call([&] { return rec.results[1].error; }),
            "cluster: invalid seed 'nope': expected host:port");
}

}  // namespace
}  // namespace sluice::redis
