// What one Admin API write costs the control thread with N routes stored: applying the
// change to the decoded index, and rebuilding the whole snapshot from it.
//
//   build/store_rebuild_bench --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <string>

#include "config/snapshot_builder.h"
#include "store/config_index.h"

namespace sluice {
namespace {

// The articles' scenario 2 plugins.
constexpr const char* kPlugins =
    ",\"plugins\":{\"limit-count\":{\"count\":2000000000000,\"time_window\":60,"
    "\"rejected_code\":503,\"key\":\"remote_addr\"},\"prometheus\":{}}";

store::Change route_change(int i, int64_t rev, bool plugins = false) {
  std::string id = "r" + std::to_string(i);
  store::Change c;
  c.entry.key = "/apisix/routes/" + id;
  c.entry.value = "{\"id\":\"" + id + "\",\"uri\":\"/r/" + std::to_string(i) +
                  "\",\"methods\":[\"GET\"],\"upstream\":{\"nodes\":{\"127.0.0.1:1980\":1}}" +
                  (plugins ? kPlugins : "") + "}";
  c.entry.create_revision = rev;
  c.entry.mod_revision = rev;
  return c;
}

store::ConfigIndex filled(int n, bool plugins = false) {
  store::ConfigIndex idx;
  for (int i = 0; i < n; ++i) {
    if (!idx.apply(route_change(i, i + 1, plugins))) {
      std::abort();
    }
  }
  return idx;
}

void BM_RebuildSnapshot(benchmark::State& state) {
  store::ConfigIndex idx = filled(static_cast<int>(state.range(0)));
  upstream::DnsCache dns(30);
  uint64_t version = 0;
  for (auto _ : state) {
    auto built = config::build_snapshot(idx.set(), dns, ++version);
    benchmark::DoNotOptimize(built);
  }
  state.counters["routes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_RebuildSnapshot)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// The same with limit-count + prometheus on every route, plugin state kept across builds as
// the Gateway keeps it.
void BM_RebuildSnapshotWithPlugins(benchmark::State& state) {
  store::ConfigIndex idx = filled(static_cast<int>(state.range(0)), true);
  upstream::DnsCache dns(30);
  plugin::Shared shared;
  uint64_t version = 0;
  for (auto _ : state) {
    auto built = config::build_snapshot(idx.set(), dns, ++version, &shared);
    benchmark::DoNotOptimize(built);
  }
  state.counters["routes"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_RebuildSnapshotWithPlugins)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

// One route PUT as the control thread sees it: decode the value into the index in place.
void BM_ApplyOneChange(benchmark::State& state) {
  int n = static_cast<int>(state.range(0));
  store::ConfigIndex idx = filled(n);
  int64_t rev = n + 1;
  for (auto _ : state) {
    auto st = idx.apply(route_change(static_cast<int>(rev % n), rev));
    benchmark::DoNotOptimize(st);
    ++rev;
  }
}
BENCHMARK(BM_ApplyOneChange)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice
