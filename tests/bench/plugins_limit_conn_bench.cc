// limit-conn's hooks per request: access (key from remote_addr, hash, one CAS on the count)
// plus log (the release), on one key and across many keys, and enter/leave under threads
// contending for one key.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "io/event_loop.h"
#include "plugins/limit_conn/limit_conn.h"
#include "plugins/limit_count/counter_table.h"
#include "plugins/limit_count/word_table.h"

namespace sluice::plugins::limit_conn {
namespace {

struct Hook {
  Hook() {
    shared.attr["limit-conn"] = plugin::Json{{"local_keys", 1 << 20}};
    auto p = info().make(plugin::Json::parse(R"({"conn": 1000000, "burst": 0,
        "default_conn_delay": 0.1, "only_use_default_delay": true, "key": "remote_addr"})"),
                         plugin::BuildEnv{"route/1", shared});
    plugin = *p;
    loop.update_time();
    worker.loop = &loop;
    ctx.worker = &worker;
    ctx.route_id = "1";
    ctx.entry = 64;
  }
  plugin::Shared shared;
  std::shared_ptr<const plugin::Plugin> plugin;
  io::EventLoop loop;
  plugin::WorkerLocal worker;
  plugin::Context ctx;
};

void BM_AccessAndLogOneKey(benchmark::State& state) {
  Hook h;
  h.ctx.match.remote_addr = "127.0.0.1";
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.plugin->access(h.ctx));
    h.plugin->log(h.ctx);
  }
}
BENCHMARK(BM_AccessAndLogOneKey);

void BM_AccessAndLogManyKeys(benchmark::State& state) {
  Hook h;
  std::vector<std::string> addrs;
  for (int64_t i = 0; i < state.range(0); ++i) {
    addrs.push_back("10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256));
  }
  size_t i = 0;
  for (auto _ : state) {
    h.ctx.match.remote_addr = addrs[i];
    benchmark::DoNotOptimize(h.plugin->access(h.ctx));
    h.plugin->log(h.ctx);
    i = i + 1 == addrs.size() ? 0 : i + 1;
  }
}
BENCHMARK(BM_AccessAndLogManyKeys)->Arg(1000)->Arg(100000);

limit_count::WordTable& shared_table() {
  static limit_count::WordTable table(1 << 20);
  return table;
}

void BM_EnterLeaveContended(benchmark::State& state) {
  uint64_t* w = shared_table().word(limit_count::key_hash("1", 1, "hot"));
  for (auto _ : state) {
    benchmark::DoNotOptimize(enter(w, 1u << 30));
    leave(w);
  }
}
BENCHMARK(BM_EnterLeaveContended)->ThreadRange(1, 4)->UseRealTime();

}  // namespace
}  // namespace sluice::plugins::limit_conn
