// api-breaker per request: the state lookup of the access hook on a healthy key (the common
// case), the count a response adds, and the same under threads sharing one key.

#include <benchmark/benchmark.h>

#include <cstdint>

#include "plugins/api_breaker/breaker_table.h"

namespace sluice::plugins::api_breaker {
namespace {

const Rule kRule{3, 3, 300};

void BM_Key(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(breaker_key(0x5eed, "127.0.0.1", "/hello"));
  }
}
BENCHMARK(BM_Key);

void BM_BrokenHealthyKey(benchmark::State& state) {
  BreakerTable table(1 << 16);
  const uint64_t k = breaker_key(0x5eed, "127.0.0.1", "/hello");
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.broken(k, kRule, 1000));
  }
}
BENCHMARK(BM_BrokenHealthyKey);

void BM_BrokenTrippedKey(benchmark::State& state) {
  BreakerTable table(1 << 16);
  const uint64_t k = breaker_key(0x5eed, "127.0.0.1", "/hello");
  for (int i = 0; i < 3; ++i) {
    table.unhealthy(k, kRule, 1000);
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.broken(k, kRule, 1001));
  }
}
BENCHMARK(BM_BrokenTrippedKey);

BreakerTable& shared_table() {
  static BreakerTable table(1 << 16);
  return table;
}

// Every thread counts failures on one key, then a success clears it now and then: the CAS
// loop under contention (the worst case: one broken upstream behind every worker).
void BM_UnhealthyContended(benchmark::State& state) {
  const uint64_t k = breaker_key(0x5eed, "127.0.0.1", "/hot");
  const Rule rule{8192, 1, 300};
  for (auto _ : state) {
    shared_table().unhealthy(k, rule, 1000);
  }
}
BENCHMARK(BM_UnhealthyContended)->ThreadRange(1, 4)->UseRealTime();

void BM_BrokenContended(benchmark::State& state) {
  const uint64_t k = breaker_key(0x5eed, "127.0.0.1", "/hot");
  for (auto _ : state) {
    benchmark::DoNotOptimize(shared_table().broken(k, kRule, 1000));
  }
}
BENCHMARK(BM_BrokenContended)->ThreadRange(1, 4)->UseRealTime();

}  // namespace
}  // namespace sluice::plugins::api_breaker
