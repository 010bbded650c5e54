// The Watcher against a real etcd (Debian's etcd-server, started here on free loopback
// ports): the first full read, changes in order, a watch compacted while the node was away,
// an etcd wiped and refilled, reachability, and a prompt stop while etcd is down. Run under
// TSan too: the watch thread hands events to this one.

#include "etcd/watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.h"

extern char** environ;

namespace sluice::etcd {
namespace {

using namespace std::chrono_literals;

// A free loopback port below the kernel's ephemeral range (32768 up, by default): etcd is
// stopped and started again on its port, and a port from the ephemeral range could meanwhile
// become the local port of another test's outgoing connection.
uint16_t free_port() {
  static std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 200; ++i) {
    auto port = static_cast<uint16_t>(std::uniform_int_distribution<int>(15000, 32000)(rng));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (ok) {
      return port;
    }
  }
  return 0;
}

// One etcd member in `dir`, on a client port of the caller's choosing.
class EtcdProcess {
 public:
  explicit EtcdProcess(std::string dir) : dir_(std::move(dir)), peer_(free_port()) {}
  ~EtcdProcess() { stop(); }

  void start(uint16_t port) {
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    std::string peer = "http://127.0.0.1:" + std::to_string(peer_);
    std::vector<std::string> args = {"etcd",
                                     "--name",
                                     "w0",
                                     "--data-dir",
                                     dir_ + "/data",
                                     "--listen-client-urls",
                                     url,
                                     "--advertise-client-urls",
                                     url,
                                     "--listen-peer-urls",
                                     peer,
                                     "--initial-advertise-peer-urls",
                                     peer,
                                     "--initial-cluster",
                                     "w0=" + peer,
                                     "--heartbeat-interval",
                                     "50",
                                     "--election-timeout",
                                     "500"};
    std::vector<char*> argv;
    for (auto& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    std::string log = dir_ + "/etcd.log";
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int rc = posix_spawnp(&pid_, "etcd", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ASSERT_EQ(rc, 0) << "cannot start etcd (scripts/setup installs etcd-server)";
    Client c(options(port));
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!c.range("/", {})) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "etcd did not come up; " << log;
      std::this_thread::sleep_for(50ms);
    }
  }
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void wipe() { std::filesystem::remove_all(dir_ + "/data"); }

  static ClientOptions options(uint16_t port) {
    ClientOptions o;
    o.endpoints.push_back(*parse_endpoint("http://127.0.0.1:" + std::to_string(port)));
    o.timeout_ms = 3000;
    return o;
  }

 private:
  std::string dir_;
  uint16_t peer_;
  pid_t pid_ = -1;
};

void put(Client& c, const std::string& key, const std::string& value) {
  auto r = c.call("/v3/kv/put", Json{{"key", base64_encode(key)}, {"value", base64_encode(value)}});
  ASSERT_TRUE(r) << r.status().message();
}

void del(Client& c, const std::string& key) {
  auto r = c.call("/v3/kv/deleterange", Json{{"key", base64_encode(key)}});
  ASSERT_TRUE(r) << r.status().message();
}

int64_t revision(Client& c) {
  auto r = c.range("/", {});
  return r ? r->header.revision : -1;
}

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-watcher-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    port_ = free_port();
    etcd_ = std::make_unique<EtcdProcess>(dir_);
    etcd_->start(port_);
    client_ = std::make_unique<Client>(EtcdProcess::options(port_));
  }
  void TearDown() override {
    watcher_.reset();
    etcd_.reset();
    std::filesystem::remove_all(dir_);
  }

  void start_watcher() {
    watcher_ = std::make_unique<Watcher>(EtcdProcess::options(port_), "/apisix",
                                         [this] { notified_.fetch_add(1); });
    watcher_->start();
  }

  // Applies events as the gateway does, until `done` holds or 10 s pass.
  template <typename Pred>
  bool run_until(Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      for (auto& ev : watcher_->take()) {
        if (ev.kind == WatchEvent::Kind::kResync) {
          state_.clear();
          for (auto& e : ev.entries) {
            state_[e.key] = e.value;
          }
          resync_revisions_.push_back(ev.revision);
        } else {
          for (auto& c : ev.changes) {
            EXPECT_GT(c.entry.mod_revision, last_change_revision_) << "changes out of order";
            last_change_revision_ = c.entry.mod_revision;
            if (c.deleted) {
              state_.erase(c.entry.key);
            } else {
              state_[c.entry.key] = c.entry.value;
            }
          }
        }
      }
      if (done()) {
        return true;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(10ms);
    }
  }

  std::string dir_;
  uint16_t port_ = 0;
  std::unique_ptr<EtcdProcess> etcd_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Watcher> watcher_;
  std::atomic<int> notified_{0};
  std::map<std::string, std::string> state_;
  std::vector<int64_t> resync_revisions_;
  int64_t last_change_revision_ = 0;
};

TEST_F(WatcherTest, FirstReadSkipsPlaceholdersThenFollowsChanges) {
  put(*client_, "/apisix/routes/", "init_dir");
  put(*client_, "/apisix/gen_id", "1");
  put(*client_, "/apisix/routes/1", "r1");
  put(*client_, "/apisix/upstreams/u", "u");
  put(*client_, "/apisixx/routes/2", "outside the prefix");
  int64_t rev = revision(*client_);
  start_watcher();
  ASSERT_TRUE(watcher_->wait_synced(5000));
  ASSERT_TRUE(run_until([&] { return !resync_revisions_.empty(); }));
  EXPECT_EQ(resync_revisions_[0], rev);
  EXPECT_EQ(state_, (std::map<std::string, std::string>{{"/apisix/routes/1", "r1"},
                                                        {"/apisix/upstreams/u", "u"}}));
  put(*client_, "/apisix/routes/1", "r1b");
  put(*client_, "/apisix/routes/3", "r3");
  del(*client_, "/apisix/upstreams/u");
  put(*client_, "/apisix/gen_id", "1");          // not a resource: no change event
  put(*client_, "/apisix/routes/", "init_dir");  // nor this
  put(*client_, "/apisixx/routes/9", "no");
  EXPECT_TRUE(run_until([&] {
    return state_ == std::map<std::string, std::string>{{"/apisix/routes/1", "r1b"},
                                                        {"/apisix/routes/3", "r3"}};
  }));
  EXPECT_TRUE(watcher_->reachable());
  EXPECT_EQ(watcher_->resyncs(), 1u);
  EXPECT_GT(notified_.load(), 0);
}

TEST_F(WatcherTest, CompactedWhileAwayRereadsEverythingAtOneRevision) {
  put(*client_, "/apisix/routes/keep", "k");
  put(*client_, "/apisix/routes/gone", "g");
  start_watcher();
  ASSERT_TRUE(run_until([&] { return state_.size() == 2; }));
  // Away: etcd comes back on another port, where this node does not look; changes are made
  // and compacted there, then etcd returns to the port the node knows.
  etcd_->stop();
  EXPECT_TRUE(run_until([&] { return !watcher_->reachable(); }));
  uint16_t other = free_port();
  etcd_->start(other);
  Client away(EtcdProcess::options(other));
  del(away, "/apisix/routes/gone");
  put(away, "/apisix/routes/new", "n");
  for (int i = 0; i < 5; ++i) {
    put(away, "/apisix/routes/churn", std::to_string(i));
  }
  del(away, "/apisix/routes/churn");
  auto c = away.call("/v3/kv/compaction",
                     Json{{"revision", std::to_string(revision(away))}, {"physical", true}});
  ASSERT_TRUE(c) << c.status().message();
  int64_t rev = revision(away);
  etcd_->stop();
  etcd_->start(port_);
  EXPECT_TRUE(run_until([&] { return resync_revisions_.size() == 2; }));
  EXPECT_EQ(resync_revisions_.back(), rev);
  EXPECT_EQ(state_, (std::map<std::string, std::string>{{"/apisix/routes/keep", "k"},
                                                        {"/apisix/routes/new", "n"}}));
  EXPECT_EQ(watcher_->resyncs(), 2u);
  EXPECT_TRUE(run_until([&] { return watcher_->reachable(); }));
  put(*client_, "/apisix/routes/after", "a");  // and it follows again
  EXPECT_TRUE(run_until([&] { return state_.contains("/apisix/routes/after"); }));
}

TEST_F(WatcherTest, WipedEtcdIsReadAgainFromScratch) {
  for (int i = 0; i < 20; ++i) {
    put(*client_, "/apisix/routes/" + std::to_string(i), "old");
  }
  start_watcher();
  ASSERT_TRUE(run_until([&] { return state_.size() == 20; }));
  int64_t before = revision(*client_);
  // A new, empty etcd filled elsewhere with another set: its revision is lower than the node's.
  etcd_->stop();
  etcd_->wipe();
  uint16_t other = free_port();
  etcd_->start(other);
  Client elsewhere(EtcdProcess::options(other));
  put(elsewhere, "/apisix/routes/fresh", "f");
  ASSERT_LT(revision(elsewhere), before);
  etcd_->stop();
  etcd_->start(port_);
  EXPECT_TRUE(run_until([&] {
    return state_ == std::map<std::string, std::string>{{"/apisix/routes/fresh", "f"}};
  }));
  ASSERT_EQ(resync_revisions_.size(), 2u);
  EXPECT_LT(resync_revisions_[1], before);
}

TEST_F(WatcherTest, StopsPromptlyWhileEtcdIsDown) {
  start_watcher();
  ASSERT_TRUE(watcher_->wait_synced(5000));
  etcd_->stop();
  ASSERT_TRUE(run_until([&] { return !watcher_->reachable(); }));
  std::this_thread::sleep_for(300ms);  // well into a backoff or a connect attempt
  auto t0 = std::chrono::steady_clock::now();
  watcher_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(WatcherNoEtcd, NeverSyncedAndUnreachable) {
  Watcher w(EtcdProcess::options(free_port()), "/apisix", [] {});
  w.start();
  EXPECT_FALSE(w.wait_synced(400));
  EXPECT_FALSE(w.reachable());
  EXPECT_TRUE(w.take().empty());
}

}  // namespace
}  // namespace sluice::etcd
