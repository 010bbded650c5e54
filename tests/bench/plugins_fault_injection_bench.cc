// fault-injection's rewrite hook per request: vars that do not match (the common case of a
// targeted fault), a sampled abort, and an abort whose body resolves a variable.

#include <benchmark/benchmark.h>

#include <memory>

#include "plugins/fault_injection/fault_injection.h"

namespace sluice::plugins::fault_injection {
namespace {

using plugin::Json;

void run(benchmark::State& state, const char* conf) {
  plugin::Shared shared;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  if (!p.is_ok()) {
    std::abort();
  }
  http::RequestHead head;
  head.method = http::Method::kGet;
  head.uri = head.path = head.target = "/hello";
  head.query = "name=allen";
  head.headers[head.num_headers++] = {"Host", "example.com"};
  plugin::Context ctx;
  ctx.req = &head;
  ctx.match.req = &head;
  ctx.match.remote_addr = "127.0.0.1";
  for (auto _ : state) {
    benchmark::DoNotOptimize((*p)->rewrite(ctx));
  }
}

void BM_VarsDoNotMatch(benchmark::State& state) {
  run(state, R"({"abort": {"http_status": 403, "body": "Fault Injection!\n",
      "vars": [[["arg_name", "==", "jack"]]]}})");
}
BENCHMARK(BM_VarsDoNotMatch);

void BM_AbortHalf(benchmark::State& state) {
  run(state, R"({"abort": {"http_status": 403, "body": "Fault Injection!", "percentage": 50}})");
}
BENCHMARK(BM_AbortHalf);

void BM_AbortBodyWithVar(benchmark::State& state) {
  run(state, R"({"abort": {"http_status": 403, "body": "client addr: $remote_addr\n"}})");
}
BENCHMARK(BM_AbortBodyWithVar);

}  // namespace
}  // namespace sluice::plugins::fault_injection
