// Feeds a realistic exposition to Prometheus's own checker. promtool comes from Debian's
// prometheus package (scripts/setup installs it); without it this test fails rather than skips,
// so a machine that cannot check the format does not pass silently.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "metrics/exposition.h"
#include "metrics/http_metrics.h"
#include "unit/metrics/sample.h"

namespace sluice::metrics {
namespace {

using testing::sample;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_shell(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return r;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) {
    r.output.append(buf, n);
  }
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string realistic_exposition() {
  static HttpMetrics w1(1000), w2(1000), tiny(1);
  w1.record(sample("1", 200, 3.25, 2.5));
  w1.record(sample("1", 404, 0.4, -1));
  w2.record(sample("1", 200, 1200, 1199));
  w2.record(sample("2", 502, 70000, 69999.5));
  HttpSample odd = sample("3", 200, 12, 10);
  odd.labels.consumer = "jack \"the\" \\ user\nx";
  odd.labels.matched_host = "*.example.com";
  odd.labels.service = "svc-\xFF";  // not UTF-8: must not turn into a parse error
  w2.record(odd);
  tiny.record(sample("1"));
  tiny.record(sample("9"));  // dropped
  static ConnStats c1, c2;
  ConnStats::inc(c1.accepted, 3);
  ConnStats::inc(c1.handled, 3);
  ConnStats::inc(c1.active, 2);
  ConnStats::inc(c1.waiting, 2);
  ConnStats::inc(c2.requests, 6);
  static const HttpMetrics* workers[] = {&w1, &w2, &tiny};
  static const ConnStats* conns[] = {&c1, &c2};
  static const Label up[] = {{"name", "/apisix/upstreams/1"}, {"ip", "127.0.0.1"}, {"port", "80"}};
  static const GaugeSample up_samples[] = {{up, 1}};
  static const GaugeSample etcd_samples[] = {{{}, 1}};
  static const GaugeFamily gauges[] = {
      {"apisix_etcd_reachable", "Config server etcd reachable from APISIX, 0 is unreachable",
       etcd_samples},
      {"apisix_upstream_status", "Upstream status from health check", up_samples}};
  ExpositionInput in;
  in.workers = workers;
  in.conns = conns;
  in.hostname = "gw-1";
  in.version = "3.9.0";
  in.gauges = gauges;
  return render(in);
}

TEST(PromtoolTest, RealisticExpositionParsesCleanly) {
  const CommandResult which = run_shell("command -v promtool");
  ASSERT_EQ(which.exit_code, 0) << "promtool not found on PATH: install Debian's prometheus "
                                   "package (scripts/setup does)";
  char path[] = "/tmp/sluice_metrics_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  const std::string text = realistic_exposition();
  std::ofstream(path) << text;
  const CommandResult check = run_shell(std::string("promtool check metrics < ") + path);
  unlink(path);
  SCOPED_TRACE("promtool said:\n" + check.output + "\non:\n" + text);
  // Exit 1 with "error while linting: text format parsing error ..." is a parse failure. Exit 3
  // is lint only, and the only lint allowed is on the names APISIX fixed (counters without
  // _total, a gauge with it), which a compatible gateway must keep.
  EXPECT_EQ(check.output.find("error"), std::string::npos);
  EXPECT_EQ(check.exit_code, 3);
  EXPECT_EQ(check.output,
            "apisix_bandwidth counter metrics should have \"_total\" suffix\n"
            "apisix_http_requests_total non-counter metrics should not have \"_total\" suffix\n"
            "apisix_http_status counter metrics should have \"_total\" suffix\n");
}

}  // namespace
}  // namespace sluice::metrics
