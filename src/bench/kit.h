#pragma once
// Finding the Python bench kit (tools/bench/sluice_bench.py) that `sluice bench` hands its
// other subcommands to.

#include <string>
#include <vector>

namespace sluice::bench {

// Where the kit may be, in order: $SLUICE_BENCH_KIT (when set and non-empty), then
// <exe_dir>/../tools/bench/sluice_bench.py, then <exe_dir>/../share/sluice/bench/sluice_bench.py.
std::vector<std::string> kit_candidates(const char* env_kit, const std::string& exe_dir);

}  // namespace sluice::bench
