// `sluice bench upstream`: parse, bind, serve until SIGTERM/SIGINT.

#include <fmt/format.h>
#include <signal.h>

#include <cstdio>

#include "bench/commands.h"
#include "bench/upstream_options.h"
#include "bench/upstream_server.h"

namespace sluice::bench {

int upstream_main(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      fputs(kUpstreamUsage, stdout);
      return 0;
    }
  }
  auto options = parse_upstream_args(args);
  if (!options) {
    fmt::print(stderr, "sluice bench upstream: {}\n{}", options.status().message(), kUpstreamUsage);
    return 2;
  }
  // Block the stop signals before any thread exists, so only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto upstream = Upstream::start(*options);
  if (!upstream) {
    fmt::print(stderr, "sluice bench upstream: {}\n", upstream.status().message());
    return 1;
  }
  fmt::print(stderr, "listening on {}\n", address_text((*upstream)->address()));
  fflush(stderr);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*upstream)->stop();
  return 0;
}

}  // namespace sluice::bench
