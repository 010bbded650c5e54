// The access log's work per request, by part: capturing the head's values (APISIX's default
// format: $remote_user, $http_host, $request, $http_referer, $http_user_agent), rendering the
// line (default and json escapes), and the writer's whole share, its write(2) every 16 KiB to a
// file in /tmp included.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "accesslog/render.h"
#include "accesslog/writer.h"

namespace sluice::accesslog {
namespace {

// A curl-like request head, as the kit's wrk sends it plus a Referer and a User-Agent.
struct Head {
  Head() {
    req.method = http::Method::kGet;
    req.method_text = "GET";
    req.target = req.path = req.uri = "/hello";
    req.host = "127.0.0.1:9080";
    req.headers[req.num_headers++] = {"Host", "127.0.0.1:9080"};
    req.headers[req.num_headers++] = {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) bench/1.0"};
    req.headers[req.num_headers++] = {"Accept", "*/*"};
    req.headers[req.num_headers++] = {"Referer", "https://www.example.com/page?x=1"};
    m.req = &req;
    m.remote_addr = "127.0.0.1";
    m.server_port = 9080;
  }
  http::RequestHead req;
  router::MatchContext m;
  std::string raw = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1:9080\r\n\r\n";
};

Record record(const Captured* head, std::span<const UpstreamTry> tries) {
  Record r;
  r.conn.remote_addr = "127.0.0.1";
  r.conn.server_port = 9080;
  r.head = head;
  r.status = 200;
  r.body_bytes_sent = 12;
  r.bytes_sent = 160;
  r.request_ms = 1;
  r.tries = tries;
  r.has_upstream_host = true;
  r.upstream_host = "127.0.0.1:9080";
  return r;
}

constexpr std::string_view kJson =
    R"({"time":"$time_iso8601","client":"$remote_addr","request":"$request","status":$status,)"
    R"("bytes":$body_bytes_sent,"request_time":$request_time,"upstream":"$upstream_addr",)"
    R"("upstream_status":"$upstream_status","ua":"$http_user_agent"})";

void BM_Capture(benchmark::State& state) {
  Format f = *Format::compile(kApisixFormat, Escape::kDefault);
  Head h;
  Captured c;
  for (auto _ : state) {
    c.capture(f, h.m, h.raw);
    benchmark::DoNotOptimize(&c);
  }
}
BENCHMARK(BM_Capture);

void BM_Render(benchmark::State& state, std::string_view format, Escape e) {
  Format f = *Format::compile(format, e);
  Head h;
  Captured c;
  c.capture(f, h.m, h.raw);
  std::vector<UpstreamTry> tries = {{"127.0.0.1:1980", 200, 0, 0, 0, 1}};
  Record r = record(&c, tries);
  Renderer renderer;
  LineBuffer out;
  out.reserve(1024);
  timespec now{1727517600, 0};
  for (auto _ : state) {
    out.clear();
    renderer.render(f, r, now, &out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK_CAPTURE(BM_Render, apisix_default, kApisixFormat, Escape::kDefault);
BENCHMARK_CAPTURE(BM_Render, json, kJson, Escape::kJson);

// What a request pays the writer: the render into the buffer, and its share of the write(2)
// that goes out every 16 KiB.
void BM_WriterLine(benchmark::State& state) {
  auto cfg = std::make_shared<Config>();
  cfg->path = "/tmp/sluice-accesslog-bench." + std::to_string(getpid());
  cfg->format = *Format::compile(kApisixFormat, Escape::kDefault);
  Head h;
  Captured c;
  c.capture(cfg->format, h.m, h.raw);
  std::vector<UpstreamTry> tries = {{"127.0.0.1:1980", 200, 0, 0, 0, 1}};
  Record r = record(&c, tries);
  {
    Writer w(cfg);
    uint64_t now = 0;
    for (auto _ : state) {
      c.capture(cfg->format, h.m, h.raw);
      w.log(r, ++now);
    }
    state.counters["writes"] = static_cast<double>(w.stats().writes);
  }
  std::remove(cfg->path.c_str());
}
BENCHMARK(BM_WriterLine);

}  // namespace
}  // namespace sluice::accesslog
