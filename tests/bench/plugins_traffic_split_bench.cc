// traffic-split's access hook per request: the weighted pick alone (smooth WRR spelled out, and
// a long cycle mapped by stride), and the whole hook with a header match in front, matching
// and not matching.

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "plugins/traffic_split/traffic_split.h"

namespace sluice::plugins::traffic_split {
namespace {

void BM_ScheduleSpelled(benchmark::State& state) {
  Schedule s({3, 2, 5});
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.next());
  }
}
BENCHMARK(BM_ScheduleSpelled);

void BM_ScheduleLongCycle(benchmark::State& state) {
  Schedule s({1000003, 2000006, 1, 7, 11, 13});
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.next());
  }
}
BENCHMARK(BM_ScheduleLongCycle);

const upstream::Upstream* fake(int i) {
  static const char storage[4] = {};
  return reinterpret_cast<const upstream::Upstream*>(&storage[i]);
}

TrafficSplit make_split() {
  std::vector<TrafficSplit::CompiledRule> rules;
  TrafficSplit::CompiledRule r;
  r.has_match = true;
  r.match.push_back(std::move(router::Expr::compile(nlohmann::json::parse(
                                  R"([["http_release","==","new_release"]])")))
                        .value());
  for (int i = 0; i < 2; ++i) {
    TrafficSplit::Choice c;
    c.kind = TrafficSplit::Choice::Kind::kUpstream;
    c.upstream = fake(i);
    r.choices.push_back(c);
  }
  r.schedule = std::make_unique<Schedule>(std::vector<int64_t>{3, 2});
  rules.push_back(std::move(r));
  return TrafficSplit(std::move(rules));
}

void run_access(benchmark::State& state, std::string_view release) {
  TrafficSplit ts = make_split();
  http::RequestHead head;
  head.method = http::Method::kGet;
  head.method_text = "GET";
  head.target = head.path = head.uri = "/headers";
  head.host = "example.com";
  head.headers[0] = http::Header{"Host", "example.com"};
  head.headers[1] = http::Header{"User-Agent", "bench/1.0"};
  head.headers[2] = http::Header{"Release", release};
  head.num_headers = 3;
  plugin::Context ctx;
  ctx.req = &head;
  ctx.match.req = &head;
  for (auto _ : state) {
    ctx.upstream_override = nullptr;
    benchmark::DoNotOptimize(ts.access(ctx));
    benchmark::DoNotOptimize(ctx.upstream_override);
  }
}

void BM_AccessMatched(benchmark::State& state) { run_access(state, "new_release"); }
BENCHMARK(BM_AccessMatched);

void BM_AccessNotMatched(benchmark::State& state) { run_access(state, "old"); }
BENCHMARK(BM_AccessNotMatched);

}  // namespace
}  // namespace sluice::plugins::traffic_split
