#pragma once
// The load generator run: starts the load threads, merges what they measured, and shapes the
// JSON report.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/load_options.h"
#include "bench/load_stats.h"
#include "common/status.h"

namespace sluice::bench {

// Thread: control
struct LoadResult {
  LoadStats stats;
  double elapsed_s = 0;  // from the common start until the last thread stopped
};

// Runs the whole load (blocking). Errors are option/URL problems; network trouble is counted
// in the result instead.
common::StatusOr<LoadResult> run_load(const LoadOptions& options);

// The report printed on stdout (field order as documented in src/bench/README.md).
nlohmann::ordered_json load_report(const LoadOptions& options, const LoadResult& result);

}  // namespace sluice::bench
