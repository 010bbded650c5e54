// limit-req's hook per request: the access hook with the local policy (key from
// remote_addr, hash, bucket CAS) on one key and across many keys, and the bucket alone under
// threads contending for one key.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/word_table.h"
#include "plugins/limit_req/limit_req.h"

namespace sluice::plugins::limit_req {
namespace {

struct Hook {
  Hook() {
    shared.attr["limit-req"] = plugin::Json{{"local_keys", 1 << 20}};
    // Every request admitted at once: the cost of the decision, not of a rejection.
    auto p =
        info().make(plugin::Json::parse(
                        R"({"rate": 1e9, "burst": 1e9, "key": "remote_addr", "nodelay": true})"),
                    plugin::BuildEnv{"route/1", shared});
    plugin = *p;
    loop.update_time();
    worker.loop = &loop;
    ctx.worker = &worker;
    ctx.route_id = "1";
  }
  plugin::Shared shared;
  std::shared_ptr<const plugin::Plugin> plugin;
  io::EventLoop loop;
  plugin::WorkerLocal worker;
  plugin::Context ctx;
};

void BM_AccessOneKey(benchmark::State& state) {
  Hook h;
  h.ctx.match.remote_addr = "127.0.0.1";
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.plugin->access(h.ctx));
  }
}
BENCHMARK(BM_AccessOneKey);

void BM_AccessManyKeys(benchmark::State& state) {
  Hook h;
  std::vector<std::string> addrs;
  for (int64_t i = 0; i < state.range(0); ++i) {
    addrs.push_back("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  size_t i = 0;
  for (auto _ : state) {
    h.ctx.match.remote_addr = addrs[i];
    benchmark::DoNotOptimize(h.plugin->access(h.ctx));
    i = i + 1 == addrs.size() ? 0 : i + 1;
  }
}
BENCHMARK(BM_AccessManyKeys)->Arg(1000)->Arg(100000);

limit_count::WordTable& shared_table() {
  static limit_count::WordTable table(1 << 20);
  return table;
}

// Every thread takes from one bucket: the CAS loop under contention.
void BM_BucketContended(benchmark::State& state) {
  Bucket b{1, 1ull << 62};
  uint64_t* w = shared_table().word(limit_count::key_hash("1", 1, "hot"));
  for (auto _ : state) {
    benchmark::DoNotOptimize(b.incoming(w, plugin::monotonic_ns()));
  }
}
BENCHMARK(BM_BucketContended)->ThreadRange(1, 4)->UseRealTime();

}  // namespace
}  // namespace sluice::plugins::limit_req
