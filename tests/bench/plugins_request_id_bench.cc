// request-id's hooks per request: making an id (each algorithm) and the rewrite that sends it
// upstream and to the client, plus header_filter on an upstream answer.

#include <benchmark/benchmark.h>

#include <string>

#include "plugins/request_id/request_id.h"

namespace sluice::plugins::request_id {
namespace {

RequestId make(const char* conf) {
  return RequestId(std::move(parse(plugin::Json::parse(conf))).value());
}

void BM_MakeId(benchmark::State& state, const char* conf) {
  RequestId p = make(conf);
  std::string id;
  for (auto _ : state) {
    id.clear();
    p.make_id(&id);
    benchmark::DoNotOptimize(id.data());
  }
}
BENCHMARK_CAPTURE(BM_MakeId, uuid, R"({})");
BENCHMARK_CAPTURE(BM_MakeId, nanoid, R"({"algorithm": "nanoid"})");
BENCHMARK_CAPTURE(BM_MakeId, range_id, R"({"algorithm": "range_id"})");
BENCHMARK_CAPTURE(BM_MakeId, ksuid, R"({"algorithm": "ksuid"})");

// rewrite + header_filter, as one request costs them.
void BM_RequestIdHooks(benchmark::State& state) {
  RequestId p = make("{}");
  http::RequestHead head;
  head.method = http::Method::kGet;
  head.path = head.uri = head.target = "/hello";
  head.headers[head.num_headers++] = {"Host", "a.com"};
  head.headers[head.num_headers++] = {"User-Agent", "bench"};
  head.headers[head.num_headers++] = {"Accept", "*/*"};
  http::ResponseHead up;
  up.status = 200;
  up.headers[up.num_headers++] = {"Content-Type", "application/json"};
  up.headers[up.num_headers++] = {"Content-Length", "2"};
  plugin::Context ctx;
  for (auto _ : state) {
    ctx.upstream.clear();
    ctx.resp.clear();
    ctx.req = &head;
    benchmark::DoNotOptimize(p.rewrite(ctx));
    ctx.upstream_resp = &up;
    p.header_filter(ctx);
  }
}
BENCHMARK(BM_RequestIdHooks);

}  // namespace
}  // namespace sluice::plugins::request_id
