#include "batch/processor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "batch/registry.h"

namespace sluice::batch {
namespace {

Settings settings(uint32_t max_size, uint64_t inactive_ms, uint64_t duration_ms) {
  Settings s;
  s.name = "test";
  s.route_id = "1";
  s.batch_max_size = max_size;
  s.inactive_timeout_ms = inactive_ms;
  s.buffer_duration_ms = duration_ms;
  return s;
}

void push(Processor& p, int n, uint64_t now) {
  bool wake = false;
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(p.push(std::to_string(i), now, &wake));
  }
}

TEST(Processor, FullBatchIsDueAtOnceAndWakesTheSender) {
  Processor p(settings(3, 5000, 60000));
  bool wake = true;
  ASSERT_TRUE(p.push("a", 0, &wake));
  EXPECT_FALSE(wake);
  ASSERT_TRUE(p.push("b", 0, &wake));
  EXPECT_FALSE(wake);
  EXPECT_EQ(p.deadline(), 5000u);
  ASSERT_TRUE(p.push("c", 0, &wake));
  EXPECT_TRUE(wake);
  EXPECT_EQ(p.deadline(), 0u);
  Batch b;
  ASSERT_TRUE(p.next(0, false, &b));
  EXPECT_EQ(b.entries, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.pending(), 3u);  // in flight until done()
  p.done(std::move(b), true, 0);
  EXPECT_EQ(p.pending(), 0u);
  EXPECT_EQ(p.counters().sent.load(), 3u);
  EXPECT_FALSE(p.next(100000, false, &b));
}

TEST(Processor, InactiveTimeoutSendsAPartialBatch) {
  Processor p(settings(10, 5000, 60000));
  push(p, 2, 1000);
  Batch b;
  EXPECT_FALSE(p.next(5999, false, &b));
  ASSERT_TRUE(p.next(6000, false, &b));
  EXPECT_EQ(b.entries.size(), 2u);
}

TEST(Processor, AnEntryRestartsTheInactiveTimeout) {
  Processor p(settings(10, 5000, 60000));
  push(p, 1, 0);
  push(p, 1, 4000);
  Batch b;
  EXPECT_FALSE(p.next(8999, false, &b));
  EXPECT_EQ(p.deadline(), 9000u);
  ASSERT_TRUE(p.next(9000, false, &b));
  EXPECT_EQ(b.entries.size(), 2u);
}

TEST(Processor, BufferDurationBoundsAnActiveBuffer) {
  Processor p(settings(1000, 5000, 10000));
  Batch b;
  for (uint64_t t = 0; t < 10000; t += 1000) {
    push(p, 1, t);
    EXPECT_FALSE(p.next(t, false, &b)) << t;
  }
  ASSERT_TRUE(p.next(10000, false, &b));  // never 5 s idle, but the first waited 10 s
  EXPECT_EQ(b.entries.size(), 10u);
}

TEST(Processor, FailuresAreRetriedAfterRetryDelayThenDropped) {
  Settings s = settings(2, 5000, 60000);
  s.max_retry_count = 2;
  s.retry_delay_ms = 1000;
  Processor p(s);
  push(p, 2, 0);
  Batch b;
  ASSERT_TRUE(p.next(0, false, &b));
  p.done(std::move(b), false, 0);
  EXPECT_EQ(p.pending(), 2u);
  EXPECT_FALSE(p.next(999, false, &b));
  ASSERT_TRUE(p.next(1000, false, &b));
  EXPECT_EQ(b.retry_count, 1u);
  p.done(std::move(b), false, 1000);
  ASSERT_TRUE(p.next(2000, false, &b));
  EXPECT_EQ(b.retry_count, 2u);
  p.done(std::move(b), false, 2000);  // the third failure: max_retry_count (2) exceeded
  EXPECT_FALSE(p.next(100000, false, &b));
  EXPECT_EQ(p.pending(), 0u);
  EXPECT_EQ(p.counters().dropped_retry.load(), 2u);
  EXPECT_EQ(p.counters().sent.load(), 0u);
}

TEST(Processor, NoRetryByDefault) {
  Processor p(settings(1, 5000, 60000));
  push(p, 1, 0);
  Batch b;
  ASSERT_TRUE(p.next(0, false, &b));
  p.done(std::move(b), false, 0);
  EXPECT_EQ(p.counters().dropped_retry.load(), 1u);
  EXPECT_EQ(p.pending(), 0u);
}

TEST(Processor, CapCountsBufferedAndInFlightEntries) {
  Settings s = settings(2, 5000, 60000);
  s.max_pending = 3;
  Processor p(s);
  push(p, 2, 0);
  Batch b;
  ASSERT_TRUE(p.next(0, false, &b));  // 2 in flight
  bool wake = false;
  EXPECT_TRUE(p.push("x", 0, &wake));
  EXPECT_FALSE(p.push("y", 0, &wake));
  EXPECT_FALSE(p.push("z", 0, &wake));
  EXPECT_EQ(p.counters().dropped_full.load(), 2u);
  p.done(std::move(b), true, 0);  // room again
  EXPECT_TRUE(p.push("w", 0, &wake));
  EXPECT_EQ(p.pending(), 2u);
}

TEST(Processor, FlushCutsTheBufferBeforeItsTime) {
  Processor p(settings(10, 5000, 60000));
  push(p, 3, 0);
  Batch b;
  EXPECT_FALSE(p.next(1, false, &b));
  ASSERT_TRUE(p.next(1, true, &b));
  EXPECT_EQ(b.entries.size(), 3u);
  EXPECT_EQ(p.counters().buffered.load(), 0u);
}

// A sink that records batches, and can fail or hang.
class FakeSink : public Sink {
 public:
  struct State {
    std::mutex mu;
    std::vector<size_t> sizes;
    std::atomic<int> fail{0};
    std::atomic<bool> hang{false};
  };
  explicit FakeSink(std::shared_ptr<State> st) : st_(std::move(st)) {}
  bool send(std::span<const std::string> entries, std::string* err) override {
    while (st_->hang.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (st_->fail.load() > 0) {
      st_->fail.fetch_sub(1);
      *err = "refused";
      return false;
    }
    std::lock_guard lock(st_->mu);
    st_->sizes.push_back(entries.size());
    return true;
  }

 private:
  std::shared_ptr<State> st_;
};

bool eventually(const std::function<bool()>& f) {
  for (int i = 0; i < 2000; ++i) {  // up to 10 s: the sender thread under qemu on a busy machine
    if (f()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(Registry, SenderThreadSendsFullBatchesAndRetiredLeftovers) {
  auto st = std::make_shared<FakeSink::State>();
  Registry reg;
  auto h = reg.start(settings(2, 60000, 600000), std::make_unique<FakeSink>(st));
  h->push("a");
  h->push("b");
  h->push("c");
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(st->mu);
    return st->sizes.size() == 1;
  }));
  h.reset();  // retired: "c" goes at once, not after inactive_timeout
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(st->mu);
    return st->sizes.size() == 2;
  }));
  EXPECT_TRUE(eventually([&] {
    std::string out;
    reg.render(out);
    return reg.size() <= 1;
  }));
}

TEST(Registry, AHangingSinkNeverBlocksPushAndDropsAreExported) {
  auto st = std::make_shared<FakeSink::State>();
  st->hang = true;
  Registry reg;
  Settings s = settings(1, 60000, 600000);
  s.max_pending = 5;
  auto h = reg.start(s, std::make_unique<FakeSink>(st));
  int dropped = 0;
  for (int i = 0; i < 100; ++i) {
    dropped += h->push("x") ? 0 : 1;
  }
  EXPECT_EQ(dropped, 95);
  std::string out;
  reg.render(out);
  EXPECT_NE(out.find("sluice_batch_process_dropped_total{name=\"test\",route_id=\"1\","
                     "reason=\"queue_full\"} 95\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# TYPE apisix_batch_process_entries gauge\n"), std::string::npos);
  EXPECT_NE(out.find("sluice_batch_process_pending{name=\"test\",route_id=\"1\"} 5\n"),
            std::string::npos)
      << out;
  st->hang = false;
  h.reset();
  reg.stop();
}

}  // namespace
}  // namespace sluice::batch

namespace sluice::batch {
namespace {

TEST(Processor, ByteCapDropsWhatWouldExceedIt) {
  Settings s = settings(10, 5000, 60000);
  s.max_pending_bytes = 10;
  Processor p(s);
  bool wake = false;
  EXPECT_TRUE(p.push("12345", 0, &wake));
  EXPECT_TRUE(p.push("12345", 0, &wake));
  EXPECT_FALSE(p.push("1", 0, &wake));
  EXPECT_EQ(p.counters().dropped_full.load(), 1u);
  Batch b;
  ASSERT_TRUE(p.next(0, true, &b));
  p.done(std::move(b), true, 0);
  EXPECT_TRUE(p.push("1", 0, &wake));
}

}  // namespace
}  // namespace sluice::batch

namespace sluice::batch {
namespace {

// Workers may push past batch_max_size before the sender wakes: the batches stay within it.
TEST(Processor, ABufferThatGrewPastTheMaxIsCutIntoBatchesOfTheMax) {
  Processor p(settings(3, 5000, 60000));
  push(p, 7, 0);
  std::vector<size_t> sizes;
  Batch b;
  while (p.next(0, false, &b)) {
    sizes.push_back(b.entries.size());
    p.done(std::move(b), true, 0);
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{3, 3}));  // the 7th waits for more or for its time
  EXPECT_EQ(p.pending(), 1u);
  ASSERT_TRUE(p.next(5000, false, &b));
  EXPECT_EQ(b.entries.size(), 1u);
}

}  // namespace
}  // namespace sluice::batch
