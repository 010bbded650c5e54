// limit-count's local counter table: the cost of one request's count (key_hash + incoming), on
// one hot key, across many keys (cache misses), and with threads contending for one key or
// each counting its own.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/limit_count/counter_table.h"

namespace sluice::plugins::limit_count {
namespace {

// The published benchmark's conf: count 2e12 in 60 s, so every request is admitted.
constexpr uint64_t kLimit = 2000000000000;
constexpr uint64_t kWindowMs = 60000;

void BM_KeyHash(benchmark::State& state) {
  const std::string key = "127.0.0.1";
  for (auto _ : state) {
    benchmark::DoNotOptimize(key_hash("1", 0x5eed, key));
  }
}
BENCHMARK(BM_KeyHash);

void BM_IncomingOneKey(benchmark::State& state) {
  CounterTable table(1 << 20);
  const uint64_t fp = key_hash("1", 0x5eed, "127.0.0.1");
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.incoming(fp, kLimit, kWindowMs, 1000));
  }
}
BENCHMARK(BM_IncomingOneKey);

void BM_HashAndIncomingOneKey(benchmark::State& state) {
  CounterTable table(1 << 20);
  const std::string key = "127.0.0.1";
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.incoming(key_hash("1", 0x5eed, key), kLimit, kWindowMs, 1000));
  }
}
BENCHMARK(BM_HashAndIncomingOneKey);

// Keys spread over the table: each request is a likely cache miss on its slot.
void BM_IncomingManyKeys(benchmark::State& state) {
  CounterTable table(1 << 20);
  std::vector<uint64_t> fps;
  for (int64_t i = 0; i < state.range(0); ++i) {
    std::string key = "10.";
    key += std::to_string(i);
    fps.push_back(key_hash("1", 0x5eed, key));
  }
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.incoming(fps[i], kLimit, kWindowMs, 1000));
    i = i + 1 == fps.size() ? 0 : i + 1;
  }
}
BENCHMARK(BM_IncomingManyKeys)->Arg(1000)->Arg(100000)->Arg(500000);

CounterTable& shared_table() {
  static CounterTable table(1 << 20);
  return table;
}

// Every thread counts the same key: the CAS loop under contention.
void BM_IncomingContendedKey(benchmark::State& state) {
  const uint64_t fp = key_hash("1", 0x5eed, "hot");
  for (auto _ : state) {
    benchmark::DoNotOptimize(shared_table().incoming(fp, kLimit, kWindowMs, 1000));
  }
}
BENCHMARK(BM_IncomingContendedKey)->ThreadRange(1, 8)->UseRealTime();

// Each thread counts its own key in the shared table: no contention beyond the table itself.
void BM_IncomingOwnKey(benchmark::State& state) {
  // Built with append: GCC 12's -Wrestrict misfires on "literal" + std::to_string at -O3.
  std::string key = "t";
  key += std::to_string(state.thread_index());
  const uint64_t fp = key_hash("1", 0x5eed, key);
  for (auto _ : state) {
    benchmark::DoNotOptimize(shared_table().incoming(fp, kLimit, kWindowMs, 1000));
  }
}
BENCHMARK(BM_IncomingOwnKey)->ThreadRange(1, 8)->UseRealTime();

}  // namespace
}  // namespace sluice::plugins::limit_count
