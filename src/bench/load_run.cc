#include "bench/load_run.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "bench/commands.h"
#include "bench/load_worker.h"
#include "bench/start_gate.h"

namespace sluice::bench {

namespace {

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Many connections need many descriptors; the soft limit is often far below the hard one.
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

nlohmann::ordered_json latency_json(const Histogram& h) {
  nlohmann::ordered_json j;
  j["min"] = us(h.min());
  j["mean"] = h.mean() / 1000.0;
  j["stdev"] = h.stdev() / 1000.0;
  j["max"] = us(h.max());
  for (double p : {50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    j[fmt::format("p{}", p)] = us(h.value_at_percentile(p));
  }
  return j;
}

void print_summary(const LoadOptions& o, const LoadResult& r) {
  const LoadStats& s = r.stats;
  const Histogram& h = s.latency;
  uint64_t errors = 0;
  for (uint64_t e : s.errors) {
    errors += e;
  }
  fmt::print(stderr,
             "{} loop, {} connections, {} threads, {:.2f} s: {} requests, {:.0f} req/s, "
             "{} errors, {} non-2xx, {} unsent\n"
             "latency us: p50 {:.1f}  p90 {:.1f}  p99 {:.1f}  p99.9 {:.1f}  max {:.1f}\n",
             o.rate ? "open" : "closed", o.connections, o.threads, r.elapsed_s, s.requests,
             r.elapsed_s > 0 ? static_cast<double>(s.requests) / r.elapsed_s : 0.0, errors,
             s.requests - s.status[1], s.unsent, us(h.value_at_percentile(50)),
             us(h.value_at_percentile(90)), us(h.value_at_percentile(99)),
             us(h.value_at_percentile(99.9)), us(h.max()));
}

}  // namespace

common::StatusOr<LoadResult> run_load(const LoadOptions& options) {
  auto target = parse_url(options.url);
  if (!target) {
    return target.status();
  }
  LoadPlan plan;
  plan.addr = target->addr;
  plan.request = build_request(options, *target);
  plan.rate = options.rate;
  plan.threads = options.threads;
  plan.duration_ns = static_cast<uint64_t>(options.duration_s * 1e9);
  plan.timeout_ns = options.timeout_ms * 1'000'000;

  StartGate gate(options.threads);
  std::vector<std::unique_ptr<LoadWorker>> workers;
  for (int k = 0; k < options.threads; ++k) {
    int conns = options.connections / options.threads + (k < options.connections % options.threads);
    workers.push_back(std::make_unique<LoadWorker>(plan, gate, k, conns));
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back([&w] { w->run(); });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  LoadResult result;
  for (auto& w : workers) {
    result.stats.merge(w->stats());
  }
  uint64_t t0 = gate.t0();
  result.elapsed_s = static_cast<double>(result.stats.finished_ns - t0) / 1e9;
  return result;
}

nlohmann::ordered_json load_report(const LoadOptions& o, const LoadResult& r) {
  const LoadStats& s = r.stats;
  nlohmann::ordered_json j;
  j["mode"] = o.rate ? "open" : "closed";
  j["url"] = o.url;
  j["connections"] = o.connections;
  j["threads"] = o.threads;
  j["duration_s"] = o.duration_s;
  j["rate"] = o.rate ? nlohmann::ordered_json(*o.rate) : nlohmann::ordered_json(nullptr);
  j["requests"] = s.requests;
  j["rps"] = r.elapsed_s > 0 ? static_cast<double>(s.requests) / r.elapsed_s : 0.0;
  j["elapsed_s"] = r.elapsed_s;
  j["sent"] = s.sent;
  j["unsent"] = s.unsent;
  nlohmann::ordered_json status;
  for (int i = 0; i < 5; ++i) {
    status[fmt::format("{}xx", i + 1)] = s.status[i];
  }
  j["status"] = status;
  j["non2xx"] = s.requests - s.status[1];
  j["errors"] = {{"connect", s.error(LoadError::kConnect)},
                 {"read", s.error(LoadError::kRead)},
                 {"write", s.error(LoadError::kWrite)},
                 {"timeout", s.error(LoadError::kTimeout)},
                 {"parse", s.error(LoadError::kParse)}};
  j["bytes_read"] = s.bytes_read;
  j["latency_us"] = latency_json(s.latency);
  nlohmann::ordered_json buckets = nlohmann::ordered_json::array();
  s.latency.for_each_bucket([&](const Histogram::Bucket& b) {
    buckets.push_back({us(b.low), us(b.high + 1), b.count});
  });
  j["histogram"] = std::move(buckets);
  return j;
}

int load_main(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      fputs(kLoadUsage, stdout);
      return 0;
    }
  }
  auto options = parse_load_args(args);
  if (!options) {
    fmt::print(stderr, "sluice bench load: {}\n{}", options.status().message(), kLoadUsage);
    return 2;
  }
  raise_fd_limit();
  auto result = run_load(*options);
  if (!result) {
    fmt::print(stderr, "sluice bench load: {}\n", result.status().message());
    return 2;
  }
  print_summary(*options, *result);
  fmt::print("{}\n", load_report(*options, *result).dump());
  return 0;
}

}  // namespace sluice::bench
