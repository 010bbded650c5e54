#include "io/event_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

namespace sluice::io {
namespace {

TEST(EventLoopTest, PostsFromManyThreadsAllRunOnTheLoopThread) {
  EventLoop loop;
  std::thread::id loop_thread;
  int ran = 0;  // touched only on the loop thread: TSan checks that claim
  constexpr int kThreads = 4, kEach = 500;
  std::atomic<int> posted{0};
  std::thread runner([&] {
    loop_thread = std::this_thread::get_id();
    loop.run();
  });
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        loop.post([&] {
          EXPECT_EQ(std::this_thread::get_id(), loop_thread);
          ++ran;
        });
        posted.fetch_add(1);
      }
    });
  }
  for (auto& p : posters) {
    p.join();
  }
  loop.post([&] { loop.stop(); });
  runner.join();
  EXPECT_EQ(ran, kThreads * kEach);
}

struct Counter : IoHandler {
  int fd;
  int events = 0;
  explicit Counter(int f) : fd(f) {}
  ~Counter() override { close(fd); }
  void on_io(uint32_t) override { ++events; }
};

// A handler retired while events for it are still queued in the same batch is not called.
struct Killer : IoHandler {
  EventLoop* loop;
  std::unique_ptr<IoHandler>* victim;
  int fd;
  Killer(EventLoop* l, std::unique_ptr<IoHandler>* v, int f) : loop(l), victim(v), fd(f) {}
  ~Killer() override { close(fd); }
  void on_io(uint32_t) override {
    if (*victim) {
      loop->retire(std::move(*victim));
    }
    loop->stop();
  }
};

TEST(EventLoopTest, RetiredHandlerGetsNoFurtherEventsInTheBatch) {
  EventLoop loop;
  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
  auto victim_owner = std::make_unique<Counter>(b[0]);
  Counter* victim = victim_owner.get();
  std::unique_ptr<IoHandler> victim_handle = std::move(victim_owner);
  Killer killer(&loop, &victim_handle, a[0]);
  // Both become readable before the loop runs: one epoll_wait returns both events.
  ASSERT_TRUE(loop.add(a[0], &killer, EPOLLIN));
  ASSERT_TRUE(loop.add(b[0], victim, EPOLLIN));
  ASSERT_EQ(write(a[1], "x", 1), 1);
  ASSERT_EQ(write(b[1], "x", 1), 1);
  int victim_events_before = victim->events;
  loop.run();
  // Whichever came first, the victim ran at most before being retired, never after.
  EXPECT_LE(victim_events_before, 1);
  EXPECT_EQ(victim_handle, nullptr);
  close(a[1]);
  close(b[1]);
}

TEST(EventLoopTest, TimersFireFromTheLoop) {
  EventLoop loop;
  bool fired = false;
  struct Ctx {
    EventLoop* loop;
    bool* fired;
  } ctx{&loop, &fired};
  Timer t(
      [](void* p) {
        auto* c = static_cast<Ctx*>(p);
        *c->fired = true;
        c->loop->stop();
      },
      &ctx);
  loop.arm(t, 20);
  uint64_t t0 = monotonic_ms();
  loop.run();
  EXPECT_TRUE(fired);
  EXPECT_GE(monotonic_ms() - t0, 10u);
}

}  // namespace
}  // namespace sluice::io
