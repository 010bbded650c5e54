#include "plugins/limit_count/counter_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

namespace sluice::plugins::limit_count {
namespace {

using Result = CounterTable::Result;

struct Step {
  uint64_t now_ms;
  uint64_t cost;
  bool allowed;
  uint64_t remaining;
  uint64_t reset_s;
};

// Runs the steps against one key; names the failing step by its index.
void run_steps(CounterTable& table, uint64_t fp, uint64_t limit, uint64_t window_ms,
               const std::vector<Step>& steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    const Result r = table.incoming(fp, limit, window_ms, s.now_ms, s.cost);
    EXPECT_EQ(r.allowed, s.allowed) << "step " << i << " at " << s.now_ms;
    EXPECT_EQ(r.remaining, s.remaining) << "step " << i << " at " << s.now_ms;
    EXPECT_EQ(r.reset_s, s.reset_s) << "step " << i << " at " << s.now_ms;
  }
}

// Starts the bodies together so that they overlap even where thread start-up is slow.
void run_threads(int n, const std::function<void(int)>& body) {
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      body(i);
    });
  }
  for (auto& t : threads) {
    t.join();
  }
}

TEST(CounterTableTest, CountTwoAdmitsTwoThenRejectsUntilTheWindowEnds) {
  CounterTable table(1024);
  // Window of 60 s starting at the first request (t=1000): it ends at t=61000.
  run_steps(table, key_hash("1", 7, "127.0.0.1"), 2, 60000,
            {
                {1000, 1, true, 1, 60},
                {1500, 1, true, 0, 60},  // 59.5 s left rounds up
                {30000, 1, false, 0, 31},
                {60999, 1, false, 0, 1},
                {61000, 1, true, 1, 60},  // the end itself starts the next window
                {61001, 1, true, 0, 60},
                {61002, 1, false, 0, 60},
            });
}

TEST(CounterTableTest, WindowStartsAtTheFirstRequestAfterTheEndNotOnClockMultiples) {
  CounterTable table(1024);
  run_steps(table, key_hash("r", 1, "k"), 1, 10000,
            {
                {1234, 1, true, 0, 10},
                {11233, 1, false, 0, 1},
                {11234, 1, true, 0, 10},  // window [11234, 21234)
                {25000, 1, true, 0, 10},  // idle gap: window [25000, 35000), not [20000, 30000)
                {30500, 1, false, 0, 5},
                {34999, 1, false, 0, 1},
                {35000, 1, true, 0, 10},
            });
}

TEST(CounterTableTest, CostsAndOddWindows) {
  CounterTable table(1024);
  run_steps(table, 11, 5, 1500,
            {
                {0, 3, true, 2, 2},  // 1.5 s window rounds up to 2
                {100, 3, false, 0, 2},
                {100, 2, true, 0, 2},
                {1000, 0, true, 0, 1},   // cost 0 only asks
                {1500, 6, false, 0, 2},  // over the limit: refused, but the window starts empty
                {1600, 5, true, 0, 2},
            });
}

TEST(CounterTableTest, LimitsAboveTheCountWidthStillReportTheRealRemaining) {
  CounterTable table(1024);
  const uint64_t huge = uint64_t{1} << 60;
  run_steps(table, 12, huge, 60000, {{0, 1, true, huge - 1, 60}, {1, 1, true, huge - 2, 60}});
  // The published benchmark's limit-count conf.
  run_steps(table, 13, 2000000000000, 60000, {{0, 1, true, 1999999999999, 60}});
  // Admission stops at the 48-bit count even when the limit is higher.
  run_steps(table, 14, huge, 60000,
            {{0, CounterTable::kMaxCount, true, huge - CounterTable::kMaxCount, 60},
             {1, 1, false, 0, 60}});
}

TEST(CounterTableTest, KeysAreIndependent) {
  CounterTable table(1024);
  const uint64_t a = key_hash("1", 7, "10.0.0.1");
  const uint64_t b = key_hash("1", 7, "10.0.0.2");
  EXPECT_TRUE(table.incoming(a, 1, 1000, 0).allowed);
  EXPECT_FALSE(table.incoming(a, 1, 1000, 1).allowed);
  EXPECT_TRUE(table.incoming(b, 1, 1000, 1).allowed);
  EXPECT_FALSE(table.incoming(b, 1, 1000, 2).allowed);
  EXPECT_EQ(table.used(), 2u);
  EXPECT_EQ(table.overflowed(), 0u);
}

TEST(CounterTableTest, GenerationWrapKeepsCounting) {
  CounterTable table(16);
  // 70,000 windows > 2^16 generations; every window still admits exactly the limit.
  uint64_t admitted = 0;
  for (uint64_t w = 0; w < 70000; ++w) {
    for (uint64_t j = 0; j < 3; ++j) {
      admitted += table.incoming(5, 2, 10, w * 10 + j).allowed;
    }
  }
  EXPECT_EQ(admitted, 140000u);
}

TEST(KeyHashTest, DiffersPerFieldAndIsNeverZero) {
  struct Case {
    const char* route;
    uint64_t conf;
    const char* key;
  };
  const std::vector<Case> cases = {
      {"1", 7, "127.0.0.1"},
      {"2", 7, "127.0.0.1"},
      {"1", 8, "127.0.0.1"},
      {"1", 7, "127.0.0.2"},
      {"ab", 7, "c"},
      {"a", 7, "bc"},
      {"", 0, ""},
      {"12345678", 0, "12345678"},
      {"1234567", 0, "812345678"},
      // Differ only in the top byte of the first word and the matching byte of the tail:
      // a plain 64-bit multiply per word let these cancel.
      {"1", 7, "10.0.108.104"},
      {"1", 7, "10.0.104.108"},
  };
  std::unordered_set<uint64_t> seen;
  for (const Case& c : cases) {
    const uint64_t h = key_hash(c.route, c.conf, c.key);
    EXPECT_NE(h, 0u);
    EXPECT_TRUE(seen.insert(h).second) << c.route << " " << c.conf << " " << c.key;
  }
  // The embedded NUL counts: std::string_view keeps it.
  EXPECT_NE(key_hash("", 0, std::string_view("\0", 1)), key_hash("", 0, ""));
  seen.clear();
  for (uint32_t i = 0; i < 100000; ++i) {
    const uint64_t h = key_hash("route", 42, "10.0." + std::to_string(i));
    EXPECT_NE(h, 0u);
    seen.insert(h);
  }
  EXPECT_EQ(seen.size(), 100000u);
}

// Sequential IP-like keys must spread over the low bits that pick the slot: 100,000 keys in
// 2^18 slots (38% full) leave no probe chain near the limit of 64.
TEST(KeyHashTest, SequentialKeysSpreadOverTheTable) {
  CounterTable table(size_t{1} << 18);
  for (uint32_t i = 0; i < 100000; ++i) {
    const std::string ip = "10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) +
                           "." + std::to_string(i & 255);
    ASSERT_TRUE(table.incoming(key_hash("1", 7, ip), 1, 1000, 0).allowed) << ip;
  }
  EXPECT_EQ(table.used(), 100000u);
  EXPECT_EQ(table.overflowed(), 0u);
}

TEST(CounterTableTest, CapacityRoundsUpToAPowerOfTwo) {
  EXPECT_EQ(CounterTable(1000).capacity(), 1024u);
  EXPECT_EQ(CounterTable(1).capacity(), 1u);
  EXPECT_EQ(CounterTable(size_t{1} << 20).capacity(), size_t{1} << 20);
}

TEST(CounterTableTest, FullTableSendsNewKeysToTheSharedOverflowSlot) {
  CounterTable table(4);
  for (uint64_t fp = 1; fp <= 4; ++fp) {
    EXPECT_TRUE(table.incoming(fp, 1, 1000, 0).allowed);
  }
  EXPECT_EQ(table.used(), 4u);
  EXPECT_EQ(table.overflowed(), 0u);
  // Keys 5 and 6 share one counter: limit 1 between them.
  EXPECT_TRUE(table.incoming(5, 1, 1000, 0).allowed);
  EXPECT_FALSE(table.incoming(6, 1, 1000, 0).allowed);
  EXPECT_EQ(table.overflowed(), 2u);
  EXPECT_EQ(table.used(), 4u);
  // Known keys still find their own slots.
  EXPECT_FALSE(table.incoming(1, 1, 1000, 1).allowed);
  EXPECT_EQ(table.overflowed(), 2u);
}

TEST(CounterTableTest, ProbeLimitSendsTheNextCollidingKeyToOverflow) {
  CounterTable table(1024);
  // Every fp starts probing at slot 7.
  for (uint64_t k = 1; k <= CounterTable::kProbeLimit; ++k) {
    EXPECT_TRUE(table.incoming(7 + k * 1024, 1, 1000, 0).allowed);
  }
  EXPECT_EQ(table.used(), CounterTable::kProbeLimit);
  EXPECT_EQ(table.overflowed(), 0u);
  EXPECT_TRUE(table.incoming(7 + 1000 * 1024, 1, 1000, 0).allowed);
  EXPECT_EQ(table.overflowed(), 1u);
  // A key starting inside the chain (at slot 8) still finds slot 71 within its 64 probes.
  EXPECT_TRUE(table.incoming(8 + 1000 * 1024, 1, 1000, 0).allowed);
  EXPECT_EQ(table.used(), CounterTable::kProbeLimit + 1);
  EXPECT_EQ(table.overflowed(), 1u);
}

TEST(CounterTableTest, ZeroCapacityDegradesToOneSharedCounter) {
  CounterTable table(0);
  EXPECT_EQ(table.capacity(), 0u);
  EXPECT_TRUE(table.incoming(1, 1, 1000, 0).allowed);
  EXPECT_FALSE(table.incoming(2, 1, 1000, 0).allowed);
  EXPECT_EQ(table.overflowed(), 2u);
}

constexpr int kThreads = 8;

TEST(CounterTableConcurrencyTest, OneKeyAdmitsExactlyTheLimitAndEachRemainingOnce) {
  constexpr uint64_t kLimit = 100000;
  constexpr int kPerThread = 25000;  // 200,000 attempts
  CounterTable table(1024);
  const uint64_t fp = key_hash("1", 1, "hot");
  std::vector<std::vector<uint64_t>> remaining(kThreads);
  run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kPerThread; ++i) {
      const Result r = table.incoming(fp, kLimit, 60000, 1000);
      if (r.allowed) {
        remaining[t].push_back(r.remaining);
      } else {
        EXPECT_EQ(r.remaining, 0u);
      }
    }
  });
  std::vector<uint64_t> all;
  for (const auto& v : remaining) {
    all.insert(all.end(), v.begin(), v.end());
  }
  ASSERT_EQ(all.size(), kLimit);
  std::sort(all.begin(), all.end());
  for (uint64_t i = 0; i < kLimit; ++i) {
    ASSERT_EQ(all[i], i);  // every count from 1 to the limit was handed out once
  }
}

TEST(CounterTableConcurrencyTest, SeveralKeysEachAdmitTheirOwnLimit) {
  const std::vector<uint64_t> limits = {1, 777, 5000, 20000};
  constexpr int kPerThread = 20000;
  CounterTable table(64);
  std::vector<std::atomic<uint64_t>> admitted(limits.size());
  run_threads(kThreads, [&](int t) {
    std::vector<uint64_t> mine(limits.size(), 0);
    for (int i = 0; i < kPerThread; ++i) {
      const size_t k = static_cast<size_t>(i + t) % limits.size();
      mine[k] += table.incoming(key_hash("r", k, "x"), limits[k], 60000, 0).allowed;
    }
    for (size_t k = 0; k < limits.size(); ++k) {
      admitted[k].fetch_add(mine[k]);
    }
  });
  for (size_t k = 0; k < limits.size(); ++k) {
    EXPECT_EQ(admitted[k].load(), limits[k]) << "key " << k;
  }
  EXPECT_EQ(table.used(), limits.size());
}

// All threads enter each window together at slightly different clocks, so they race to end
// the old window: exactly one may start the new one, and each window admits exactly the limit.
TEST(CounterTableConcurrencyTest, RacingIntoEachNewWindowAdmitsExactlyTheLimit) {
  constexpr uint64_t kLimit = 1000;
  constexpr uint64_t kWindow = 1000;
  constexpr int kPhases = 100;
  constexpr int kPerThread = 200;  // 1,600 attempts per window
  CounterTable table(1024);
  std::vector<std::atomic<uint64_t>> admitted(kPhases);
  std::barrier sync(kThreads);
  run_threads(kThreads, [&](int t) {
    for (int p = 0; p < kPhases; ++p) {
      sync.arrive_and_wait();
      // Window p starts at base + (0..7); every clock of phase p+1 is past its end.
      const uint64_t now = p * (kWindow + kThreads) + t;
      uint64_t mine = 0;
      for (int i = 0; i < kPerThread; ++i) {
        mine += table.incoming(99, kLimit, kWindow, now).allowed;
      }
      admitted[p].fetch_add(mine);
    }
  });
  for (int p = 0; p < kPhases; ++p) {
    EXPECT_EQ(admitted[p].load(), kLimit) << "window " << p;
  }
}

// The clock moves while the threads hammer one key. Within a window each admitted request
// takes a distinct count, so admissions with remaining r come one per window that reached
// limit - r: the tally is non-increasing from r = limit-1 down to 0, and its top is the number
// of windows, which cannot exceed elapsed / window + 1.
TEST(CounterTableConcurrencyTest, MovingClockNeverOverAdmitsAWindow) {
  constexpr uint64_t kLimit = 50;
  constexpr uint64_t kWindow = 25;
  constexpr int kPerThread = 20000;
  CounterTable table(1024);
  std::atomic<uint64_t> clock{0};
  std::vector<std::atomic<uint64_t>> tally(kLimit);
  std::atomic<uint64_t> rejected{0};
  run_threads(kThreads, [&](int t) {
    std::vector<uint64_t> mine(kLimit, 0);
    uint64_t refused = 0;
    for (int i = 0; i < kPerThread; ++i) {
      if (i % 64 == t) {
        clock.fetch_add(1);
      }
      const Result r = table.incoming(3, kLimit, kWindow, clock.load());
      if (!r.allowed) {
        ++refused;
      } else if (r.remaining < kLimit) {
        ++mine[r.remaining];
      } else {
        ADD_FAILURE() << "remaining " << r.remaining;
      }
    }
    for (uint64_t r = 0; r < kLimit; ++r) {
      tally[r].fetch_add(mine[r]);
    }
    rejected.fetch_add(refused);
  });
  uint64_t admitted = 0;
  for (uint64_t r = 0; r < kLimit; ++r) {
    admitted += tally[r].load();
    if (r + 1 < kLimit) {
      EXPECT_LE(tally[r].load(), tally[r + 1].load()) << "remaining " << r;
    }
  }
  const uint64_t windows = tally[kLimit - 1].load();
  EXPECT_GE(windows, 1u);
  EXPECT_LE(windows, clock.load() / kWindow + 1);
  EXPECT_LE(admitted, windows * kLimit);
  EXPECT_EQ(admitted + rejected.load(), uint64_t{kThreads} * kPerThread);
}

// Each round, the threads race to claim slots: with one key, for the same slot; with a key
// each, all starting at the same slot. Every key must end up with a counter of its own.
TEST(CounterTableConcurrencyTest, RacingClaimsGiveEachKeyItsOwnSlot) {
  constexpr int kRounds = 2000;
  constexpr uint64_t kCapacity = 32768;
  CounterTable one_key(kCapacity);
  CounterTable key_each(kCapacity);
  std::vector<std::atomic<uint64_t>> shared(kRounds), own(kRounds);
  std::barrier sync(kThreads);
  run_threads(kThreads, [&](int t) {
    for (int round = 0; round < kRounds; ++round) {
      sync.arrive_and_wait();
      shared[round] += one_key.incoming(key_hash("claim", round, "k"), 1, 1000, 0).allowed;
      // Slots round*16 .. +7 for this round's eight keys; the rounds' chains never touch.
      own[round] += key_each.incoming(round * 16 + (t + 1) * kCapacity, 1, 1000, 0).allowed;
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    EXPECT_EQ(shared[round].load(), 1u) << "round " << round;
    EXPECT_EQ(own[round].load(), uint64_t{kThreads}) << "round " << round;
  }
  EXPECT_EQ(one_key.used(), size_t{kRounds});
  EXPECT_EQ(key_each.used(), size_t{kRounds} * kThreads);
  EXPECT_EQ(key_each.overflowed(), 0u);
}

}  // namespace
}  // namespace sluice::plugins::limit_count
