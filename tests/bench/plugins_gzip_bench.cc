// gzip's and brotli's hooks per response, run through the plugin chain as the server does:
// a 64 KiB HTML-like body in pieces of 16 KiB at gzip level 1 (the default) and 6 and brotli
// level 1, reported as ns and compressed bytes per KiB of input; and the cost the plugin adds
// to a response it leaves alone (a type it does not compress).

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "plugin/chain.h"
#include "plugins/brotli/brotli.h"
#include "plugins/gzip/gzip.h"

namespace sluice::plugins {
namespace {

using plugin::Phase;

std::string html(size_t n) {
  static const char* kWords[] = {"<div class=\"route\">",
                                 "gateway ",
                                 "upstream ",
                                 "</div>\n",
                                 "<p>",
                                 "plugin ",
                                 "42 ",
                                 "</p>"};
  std::mt19937 rng(1);
  std::string s;
  while (s.size() < n) {
    s += kWords[rng() % 8];
  }
  s.resize(n);
  return s;
}

struct Rig {
  plugin::Shared shared;
  plugin::WorkerLocal worker;
  plugin::Context ctx;
  http::RequestHead req;
  http::ResponseHead up;
  std::unique_ptr<plugin::Chain> chain;
  plugin::Chains chains;

  Rig(const plugin::PluginInfo& info, const char* conf, const char* type) {
    info.worker_init(shared, worker);
    auto p = info.make(plugin::Json::parse(conf), plugin::BuildEnv{"route/1", shared});
    std::vector<plugin::Entry> e(1);
    e[0].name = std::string(info.name);
    e[0].priority = info.priority;
    e[0].plugin = *p;
    chain = std::make_unique<plugin::Chain>(std::move(e));
    chains.route = chain.get();
    req.method = http::Method::kGet;
    req.headers[0] = {"Accept-Encoding", "gzip, deflate, br"};
    req.num_headers = 1;
    up.status = 200;
    up.headers[0] = {"Content-Type", type};
    up.num_headers = 1;
    up.body_kind = http::BodyKind::kChunked;
  }
  // One response: head, pieces, end, log. Returns the bytes sent.
  size_t respond(const std::string& body, size_t piece) {
    ctx.reset();
    ctx.worker = &worker;
    ctx.req = &req;
    plugin::prepare(chains, ctx);
    ctx.req = nullptr;
    ctx.status = 200;
    ctx.upstream_resp = &up;
    plugin::run_response(chains, ctx, Phase::kHeaderFilter);
    ctx.upstream_resp = nullptr;
    size_t sent = 0;
    for (size_t at = 0; at < body.size(); at += piece) {
      sent += plugin::run_body_filter(chains, ctx, std::string_view(body).substr(at, piece), false)
                  .size();
    }
    sent += plugin::run_body_filter(chains, ctx, {}, true).size();
    plugin::run_response(chains, ctx, Phase::kLog);
    return sent;
  }
};

void run(benchmark::State& state, const plugin::PluginInfo& info, const char* conf,
         const char* type) {
  Rig rig(info, conf, type);
  const std::string body = html(64 * 1024);
  size_t sent = 0;
  for (auto _ : state) {
    sent = rig.respond(body, 16 * 1024);
    benchmark::DoNotOptimize(sent);
  }
  double kib = static_cast<double>(body.size()) / 1024;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["ns_per_KiB"] =
      benchmark::Counter(kib * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["out_bytes_per_KiB"] = static_cast<double>(sent) / kib;
}

void BM_GzipLevel1(benchmark::State& state) { run(state, gzip::info(), "{}", "text/html"); }
BENCHMARK(BM_GzipLevel1);

void BM_GzipLevel6(benchmark::State& state) {
  run(state, gzip::info(), R"({"comp_level": 6})", "text/html");
}
BENCHMARK(BM_GzipLevel6);

void BM_BrotliLevel1(benchmark::State& state) {
  run(state, brotli::info(), R"({"comp_level": 1})", "text/html");
}
BENCHMARK(BM_BrotliLevel1);

// A response gzip leaves alone: the hooks' cost around a body that passes as it is.
void BM_GzipPassThrough(benchmark::State& state) { run(state, gzip::info(), "{}", "image/png"); }
BENCHMARK(BM_GzipPassThrough);

}  // namespace
}  // namespace sluice::plugins
