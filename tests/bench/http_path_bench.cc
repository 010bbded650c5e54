// Micro-benchmarks of http::normalize_path, which every routed request pays once: a path that
// is already normal (the common case: one scan, no copy) and ones that need decoding or dot
// segments resolved (copied into the buffer).

#include <benchmark/benchmark.h>

#include <string_view>

#include "http/path.h"

namespace sluice::http {
namespace {

void run(benchmark::State& state, std::string_view raw) {
  char buf[256];
  for (auto _ : state) {
    NormalizedPath n = normalize_path(raw, buf);
    benchmark::DoNotOptimize(n);
  }
}

void BM_NormalPath(benchmark::State& state) { run(state, "/api/v1/users/42"); }
void BM_NormalLongPath(benchmark::State& state) {
  run(state, "/static/js/vendor/app.3f9c1e0a7b2d4e6f8a0c1e3b5d7f9a1c.chunk.min.js");
}
void BM_EncodedPath(benchmark::State& state) { run(state, "/api/v1/users/j%C3%BCrgen%20m"); }
void BM_DottedPath(benchmark::State& state) { run(state, "//api/v1/./internal/../users/42"); }

BENCHMARK(BM_NormalPath);
BENCHMARK(BM_NormalLongPath);
BENCHMARK(BM_EncodedPath);
BENCHMARK(BM_DottedPath);

}  // namespace
}  // namespace sluice::http
