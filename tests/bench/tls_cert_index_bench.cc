// Micro-benchmarks of tls::CertIndex::find, which every TLS handshake pays once in its
// ClientHello callback: an exact name, a name under a wildcard, a name deeper than a wildcard
// covers (refused), a miss that falls to `*`, and mixed case with a trailing dot. Run with 10,
// 1,000 and 10,000 certificates (half exact names, half wildcards): the time should not grow
// with the count, so 10,000 certificates do not slow a handshake. Shown here, not asserted.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "tls/cert_index.h"

namespace sluice::tls {
namespace {

// An index of `n` objects: "host<i>.zone<i%97>.example.com" and "*.svc<i>.example.net".
std::unique_ptr<CertIndex> make_index(int n) {
  auto idx = std::make_unique<CertIndex>();
  for (int i = 0; i < n; ++i) {
    auto e = std::make_shared<const CertEntry>();
    if (i % 2 == 0) {
      idx->add("host" + std::to_string(i) + ".zone" + std::to_string(i % 97) + ".example.com", e);
    } else {
      idx->add("*.svc" + std::to_string(i) + ".example.net", e);
    }
  }
  idx->add("*", std::make_shared<const CertEntry>());
  return idx;
}

void run(benchmark::State& state, const std::string& sni, bool found) {
  auto idx = make_index(static_cast<int>(state.range(0)));
  if ((idx->find(sni) != nullptr) != found) {
    state.SkipWithError("the index does not answer as the benchmark expects");
    return;
  }
  for (auto _ : state) {
    const CertEntryPtr* e = idx->find(sni);
    benchmark::DoNotOptimize(e);
  }
}

// Names present in every index size (i = 4 and i = 5).
void BM_FindExact(benchmark::State& state) { run(state, "host4.zone4.example.com", true); }
void BM_FindWildcard(benchmark::State& state) { run(state, "api.svc5.example.net", true); }
void BM_FindDeeperThanWildcard(benchmark::State& state) {
  run(state, "a.b.svc5.example.net", false);
}
void BM_FindAny(benchmark::State& state) { run(state, "unknown.elsewhere.org", true); }
void BM_FindMixedCaseTrailingDot(benchmark::State& state) {
  run(state, "HOST4.Zone4.Example.COM.", true);
}

BENCHMARK(BM_FindExact)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_FindWildcard)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_FindDeeperThanWildcard)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_FindAny)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_FindMixedCaseTrailingDot)->Arg(10)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace sluice::tls
