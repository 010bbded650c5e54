// cors's hook per request: the rewrite that decides and sets the CORS headers (the plugin's
// only hook), for the default conf, an origin list, a regex, and a preflight.

#include <benchmark/benchmark.h>

#include <string>

#include "plugins/cors/cors.h"

namespace sluice::plugins::cors {
namespace {

Cors make(const char* conf) { return Cors(std::move(parse(plugin::Json::parse(conf))).value()); }

void run(benchmark::State& state, const char* conf, http::Method method, std::string_view origin) {
  Cors p = make(conf);
  http::RequestHead head;
  head.method = method;
  head.method_text = method == http::Method::kOptions ? "OPTIONS" : "GET";
  head.path = head.uri = head.target = "/hello";
  head.headers[head.num_headers++] = {"Host", "a.com"};
  head.headers[head.num_headers++] = {"User-Agent", "bench"};
  head.headers[head.num_headers++] = {"Accept", "*/*"};
  if (!origin.empty()) {
    head.headers[head.num_headers++] = {"Origin", origin};
  }
  plugin::Context ctx;
  for (auto _ : state) {
    ctx.resp.clear();
    ctx.req = &head;
    benchmark::DoNotOptimize(p.rewrite(ctx));
  }
}

void BM_CorsDefault(benchmark::State& state) {
  run(state, "{}", http::Method::kGet, "http://a.com");
}
BENCHMARK(BM_CorsDefault);

void BM_CorsOriginList(benchmark::State& state) {
  run(state,
      R"({"allow_origins": "http://a.com,http://b.com,http://c.com", "allow_methods": "GET,POST",
          "allow_headers": "h1", "expose_headers": "e1", "allow_credential": true})",
      http::Method::kGet, "http://c.com");
}
BENCHMARK(BM_CorsOriginList);

void BM_CorsRegex(benchmark::State& state) {
  run(state, R"({"allow_origins_by_regex": [".*\\.test\\.com$"]})", http::Method::kGet,
      "http://a.b.test.com");
}
BENCHMARK(BM_CorsRegex);

void BM_CorsPreflight(benchmark::State& state) {
  run(state, R"({"allow_origins": "**", "allow_headers": "**"})", http::Method::kOptions,
      "http://a.com");
}
BENCHMARK(BM_CorsPreflight);

}  // namespace
}  // namespace sluice::plugins::cors
