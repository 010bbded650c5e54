#include "io/timer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::io {
namespace {

struct Fired {
  std::vector<std::string>* log;
  std::string name;
};

void record(void* arg) {
  auto* f = static_cast<Fired*>(arg);
  f->log->push_back(f->name);
}

TEST(TimerQueueTest, FiresInDeadlineOrderAcrossDurations) {
  std::vector<std::string> log;
  Fired a{&log, "a"}, b{&log, "b"}, c{&log, "c"};
  Timer ta(&record, &a), tb(&record, &b), tc(&record, &c);
  TimerQueue q;
  q.arm(ta, 0, 100);
  q.arm(tb, 0, 50);
  q.arm(tc, 10, 100);
  EXPECT_EQ(q.next_timeout_ms(0), 50);
  q.run_due(49);
  EXPECT_TRUE(log.empty());
  q.run_due(100);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(q.next_timeout_ms(100), 10);
  q.run_due(110);
  EXPECT_EQ(log.size(), 3u);
  EXPECT_EQ(q.next_timeout_ms(110), -1);
}

TEST(TimerQueueTest, RearmMovesToTheBackAndCancelStopsIt) {
  std::vector<std::string> log;
  Fired a{&log, "a"}, b{&log, "b"};
  Timer ta(&record, &a), tb(&record, &b);
  TimerQueue q;
  q.arm(ta, 0, 100);
  q.arm(tb, 5, 100);
  q.arm(ta, 20, 100);  // re-armed later: now after b
  q.run_due(110);
  EXPECT_EQ(log, (std::vector<std::string>{"b"}));
  TimerQueue::cancel(ta);
  EXPECT_FALSE(ta.armed());
  q.run_due(1000);
  EXPECT_EQ(log.size(), 1u);
}

TEST(TimerQueueTest, DestroyedTimerUnlinksItself) {
  std::vector<std::string> log;
  Fired a{&log, "a"};
  TimerQueue q;
  {
    Timer t(&record, &a);
    q.arm(t, 0, 10);
  }
  q.run_due(100);
  EXPECT_TRUE(log.empty());
}

}  // namespace
}  // namespace sluice::io
