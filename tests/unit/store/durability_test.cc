// Durability: every put the store acknowledged is on disk when its process dies by SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <thread>

#include "store/store.h"
#include "store_test_util.h"

namespace sluice::store {
namespace {

// What the child reports after each acknowledged put; 16 bytes, so one write() is atomic.
struct Ack {
  int64_t index;
  int64_t revision;
};

std::string key_of(int round, int64_t index) {
  return "/apisix/routes/" + std::to_string(round) + "-" + std::to_string(index);
}

std::string value_of(int round, int64_t index) {
  return R"({"uri":"/r)" + std::to_string(round) + "/" + std::to_string(index) + R"("})";
}

// The child: puts until killed, acknowledging each put through `ack_fd`.
[[noreturn]] void put_forever(const std::string& dir, int round, int ack_fd) {
  auto store = open_embedded(dir);
  if (!store.is_ok()) {
    _exit(2);
  }
  for (int64_t i = 0;; ++i) {
    auto put = (*store)->put(key_of(round, i), value_of(round, i), 0, std::nullopt);
    if (!put.is_ok()) {
      _exit(3);
    }
    const Ack ack{i, put->mod_revision};
    if (write(ack_fd, &ack, sizeof(ack)) != static_cast<ssize_t>(sizeof(ack))) {
      _exit(4);
    }
  }
}

// Starts a child writer, kills it at a random moment after its first ack, and returns its acks.
std::map<int64_t, int64_t> run_and_kill(const std::string& dir, int round, std::mt19937& rng) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    put_forever(dir, round, fds[1]);
  }
  close(fds[1]);
  std::map<int64_t, int64_t> acks;  // index -> revision
  Ack ack{};
  bool first = read(fds[0], &ack, sizeof(ack)) == static_cast<ssize_t>(sizeof(ack));
  if (first) {
    acks[ack.index] = ack.revision;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 150));
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer ended by itself, status " << status;
  while (read(fds[0], &ack, sizeof(ack)) == static_cast<ssize_t>(sizeof(ack))) {
    acks[ack.index] = ack.revision;
  }
  close(fds[0]);
  return acks;
}

TEST(StoreDurability, AcknowledgedPutsSurviveSigkill) {
  TempDir dir;
  std::mt19937 rng(std::random_device{}());
  std::map<int, std::map<int64_t, int64_t>> acked;  // round -> index -> revision
  int64_t newest = 0;
  for (int round = 0; round < 4; ++round) {
    acked[round] = run_and_kill(dir.path(), round, rng);
    ASSERT_FALSE(acked[round].empty()) << "round " << round << ": the writer acknowledged nothing";
    EXPECT_GT(acked[round].begin()->second, newest) << "a revision was reused after a crash";

    auto store = must_open(dir.path());  // also proves the dead writer's lock is gone
    ASSERT_NE(store, nullptr);
    for (const auto& [r, acks] : acked) {
      for (const auto& [index, revision] : acks) {
        auto got = store->get(key_of(r, index));
        ASSERT_TRUE(got.is_ok()) << got.status().message();
        ASSERT_TRUE(*got) << "acknowledged put lost: " << key_of(r, index);
        EXPECT_EQ((*got)->value, value_of(r, index));
        EXPECT_EQ((*got)->mod_revision, revision);
        newest = std::max(newest, revision);
      }
    }
    EXPECT_GE(store->revision(), newest);
    newest = store->revision();  // a put committed but not yet acknowledged counts too
  }
  ::testing::Test::RecordProperty("revisions_written", std::to_string(newest));
}

}  // namespace
}  // namespace sluice::store
