// Cost of the prometheus plugin's per-request work: HttpMetrics::record() for a label set the
// worker has already seen (no allocation, no locked instruction), among few or many sets, and
// for a sample dropped at the cap; plus one scrape's render() for comparison.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"

namespace sluice::metrics {
namespace {

HttpSample sample_for(const std::string& route) {
  HttpSample s;
  s.code = 200;
  s.labels.route = route;
  s.labels.service = "svc-orders";
  s.labels.node = "10.0.12.7";
  s.labels.matched_uri = "/api/v1/orders/*";
  s.labels.matched_host = "shop.example.com";
  s.request_ms = 12.5;
  s.upstream_ms = 11.0;
  s.apisix_ms = 1.5;
  s.ingress_bytes = 512;
  s.egress_bytes = 4096;
  return s;
}

std::vector<std::string> route_ids(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back("route-" + std::to_string(i));
  }
  return ids;
}

// state.range(0) label sets, visited in turn.
void BM_RecordSeen(benchmark::State& state) {
  const std::vector<std::string> ids = route_ids(static_cast<int>(state.range(0)));
  std::vector<HttpSample> samples;
  for (const std::string& id : ids) {
    samples.push_back(sample_for(id));
  }
  HttpMetrics m(100000);
  for (const HttpSample& s : samples) {
    m.record(s);
  }
  size_t i = 0;
  for (auto _ : state) {
    m.record(samples[i]);
    i = i + 1 == samples.size() ? 0 : i + 1;
  }
  benchmark::DoNotOptimize(m.dropped());
}
BENCHMARK(BM_RecordSeen)->Arg(1)->Arg(100)->Arg(10000);

void BM_RecordDroppedAtCap(benchmark::State& state) {
  const std::string route = "unseen";
  const HttpSample s = sample_for(route);
  HttpMetrics m(0);
  for (auto _ : state) {
    m.record(s);
  }
  benchmark::DoNotOptimize(m.dropped());
}
BENCHMARK(BM_RecordDroppedAtCap);

// One scrape of 4 workers that each hold state.range(0) routes (two sets per route).
void BM_Render(benchmark::State& state) {
  const std::vector<std::string> ids = route_ids(static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<HttpMetrics>> workers;
  std::vector<const HttpMetrics*> views;
  for (int w = 0; w < 4; ++w) {
    workers.push_back(std::make_unique<HttpMetrics>(100000));
    for (const std::string& id : ids) {
      workers.back()->record(sample_for(id));
    }
    views.push_back(workers.back().get());
  }
  ExpositionInput in;
  in.workers = views;
  for (auto _ : state) {
    benchmark::DoNotOptimize(render(in));
  }
}
BENCHMARK(BM_Render)->Arg(10)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sluice::metrics
