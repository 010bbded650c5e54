// proxy-cache's memory hit: the zone's lookup under its lock (one thread, and threads
// contending for one hot key), and the whole access hook of a hit (key built from $host and
// $request_uri, lookup, the stored fields handed over) with the log hook that releases it.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "io/event_loop.h"
#include "plugins/proxy_cache/proxy_cache.h"

namespace sluice::plugins::proxy_cache {
namespace {

std::shared_ptr<Entry> stored(const std::string& key) {
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->status = 200;
  e->add_field("Content-Type", "text/plain");
  e->add_field("Server", "fake-upstream/1.0");
  e->freeze();
  e->body.assign(13, 'x');
  e->created = now_s();
  e->ttl = 3600;
  return e;
}

MemoryZone& hot_zone() {
  static MemoryZone* z = [] {
    auto* zone = new MemoryZone(50 << 20);
    zone->put(stored("example.com/hello"));
    return zone;
  }();
  return *z;
}

void BM_MemoryZoneGet(benchmark::State& state) {
  MemoryZone& z = hot_zone();
  const std::string key = "example.com/hello";
  const uint64_t h = key_hash(key);
  for (auto _ : state) {
    benchmark::DoNotOptimize(z.get(key, h));
  }
}
BENCHMARK(BM_MemoryZoneGet)->ThreadRange(1, 4)->UseRealTime();

void BM_MemoryHitAccess(benchmark::State& state) {
  io::EventLoop loop;
  plugin::WorkerLocal worker;
  worker.loop = &loop;
  plugin::Shared shared;
  auto made =
      info().make(plugin::Json::parse(R"({"cache_strategy":"memory","cache_zone":"memory_cache"})"),
                  plugin::BuildEnv{"route/1", shared});
  auto p = std::static_pointer_cast<const ProxyCache>(*made);
  http::RequestHead req;
  req.method = http::Method::kGet;
  req.method_text = "GET";
  req.target = req.path = req.uri = "/hello";
  req.host = "example.com";
  plugin::Context ctx;
  ctx.worker = &worker;
  // Fill once through the hooks.
  ctx.req = &req;
  ctx.match.req = &req;
  p->access(ctx);
  http::ResponseHead head;
  head.status = 200;
  head.headers[head.num_headers++] = {"Content-Type", "text/plain"};
  ctx.upstream_resp = &head;
  p->header_filter(ctx);
  plugin::BodyPiece piece("hello, world\n", true, &ctx.body_buffer);
  p->body_filter(ctx, piece);
  p->log(ctx);
  for (auto _ : state) {
    ctx.req = &req;
    ctx.match.req = &req;
    ctx.resp.clear();
    plugin::Action a = p->access(ctx);
    benchmark::DoNotOptimize(a);
    if (a != plugin::Action::kReply) {
      state.SkipWithError("not a hit");
      break;
    }
    p->log(ctx);
  }
}
BENCHMARK(BM_MemoryHitAccess);

}  // namespace
}  // namespace sluice::plugins::proxy_cache
