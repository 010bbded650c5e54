// Workers record while another thread renders: run under TSan (build with -DSLUICE_TSAN=ON) to
// check that the cells and the series lists are race-free.

#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <string>
#include <thread>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"
#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::sample;

// Sum of the values of the lines that start with `prefix`.
uint64_t sum_lines(const std::string& text, std::string_view prefix) {
  uint64_t total = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string_view line(text.data() + at, end - at);
    if (line.starts_with(prefix)) {
      std::string_view value = line.substr(line.rfind(' ') + 1);
      uint64_t v = 0;
      std::from_chars(value.data(), value.data() + value.size(), v);
      total += v;
    }
    at = end + 1;
  }
  return total;
}

TEST(ConcurrencyTest, RendersWhileWorkersRecordAndEndsWithEveryRecordedSample) {
  constexpr int kWorkers = 2, kSamples = 20000, kRoutes = 7;
  std::vector<std::unique_ptr<HttpMetrics>> metrics;
  std::vector<const HttpMetrics*> views;
  for (int w = 0; w < kWorkers; ++w) {
    metrics.push_back(std::make_unique<HttpMetrics>(1000));
    views.push_back(metrics.back().get());
  }
  std::atomic<int> running{kWorkers};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      const std::string routes[kRoutes] = {"1", "2", "3", "4", "5", "6", "7"};
      for (int i = 0; i < kSamples; ++i) {
        metrics[w]->record(sample(routes[i % kRoutes], i % 3 == 0 ? 404 : 200, i % 100, 1));
      }
      running.fetch_sub(1);
    });
  }
  ExpositionInput in;
  in.workers = views;
  uint64_t last = 0;
  int renders = 0;
  while (running.load() > 0 || renders == 0) {
    const uint64_t seen = sum_lines(render(in), "apisix_http_status{");
    EXPECT_GE(seen, last);  // a single writer per cell: counts never go back
    EXPECT_LE(seen, uint64_t{kWorkers} * kSamples);
    last = seen;
    ++renders;
  }
  for (auto& t : workers) {
    t.join();
  }
  const std::string final_text = render(in);
  EXPECT_EQ(sum_lines(final_text, "apisix_http_status{"), uint64_t{kWorkers} * kSamples);
  EXPECT_EQ(sum_lines(final_text, "apisix_http_latency_count{type=\"request\""),
            uint64_t{kWorkers} * kSamples);
  EXPECT_EQ(sum_lines(final_text, "apisix_http_status{code=\"404\""),
            uint64_t{kWorkers} * ((kSamples + 2) / 3));
  EXPECT_EQ(testing::count_of(final_text, "apisix_http_status{"), size_t{2 * kRoutes});
}

}  // namespace
}  // namespace sluice::metrics
