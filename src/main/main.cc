// sluice: the gateway's command line.

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/commands.h"
#include "common/inherited_fds.h"
#include "runtime/config_tool.h"
#include "runtime/gateway.h"

namespace {

constexpr const char* kUsage =
    "usage: sluice run [-c conf/config.yaml]   run the gateway in the foreground\n"
    "       sluice version                     print the version\n"
    "       sluice config dump|load [...]      move a configuration between the embedded\n"
    "                                          store, etcd and apisix.yaml (--help)\n"
    "       sluice bench load --url URL [...]  load generator, JSON on stdout (--help)\n"
    "       sluice bench upstream [...]        built-in upstream for benchmarks (--help)\n"
    "       sluice bench [...]                 the bench kit (tools/bench), e.g. --help\n";

// `sluice bench load|upstream` run here; anything else goes to the Python kit.
int bench(int argc, char** argv) {
  std::string sub = argc > 2 ? argv[2] : "";
  if (sub == "load" || sub == "upstream") {
    std::vector<std::string> args(argv + 3, argv + argc);
    return sub == "load" ? sluice::bench::load_main(args) : sluice::bench::upstream_main(args);
  }
  return sluice::bench::kit_main(std::vector<std::string>(argv + 2, argv + argc));
}

// The command line again, for a binary upgrade (SIGUSR2): a relative program path is made
// absolute (the working directory may differ later) without resolving symlinks, so a link
// switched to a new release starts the new release.
std::vector<std::string> own_command_line(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  char cwd[PATH_MAX];
  if (args[0].find('/') != std::string::npos && args[0][0] != '/' &&
      getcwd(cwd, sizeof(cwd)) != nullptr) {
    args[0] = std::string(cwd) + "/" + args[0];
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  sluice::common::close_started_fd();  // a binary upgrade's parent waits for this
  if (argc < 2) {
    fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "version" || cmd == "--version" || cmd == "-v") {
    printf("sluice %s\n", SLUICE_VERSION);
    return 0;
  }
  if (cmd == "bench") {
    return bench(argc, argv);
  }
  if (cmd == "config") {
    return sluice::runtime::config_main(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (cmd != "run") {
    fputs(kUsage, stderr);
    return 2;
  }
  std::string config = "conf/config.yaml";
  for (int i = 2; i < argc; ++i) {
    if ((std::strcmp(argv[i], "-c") == 0 || std::strcmp(argv[i], "--config") == 0) &&
        i + 1 < argc) {
      config = argv[++i];
    } else {
      fprintf(stderr, "unknown argument %s\n%s", argv[i], kUsage);
      return 2;
    }
  }
  sluice::runtime::Gateway gw(config, own_command_line(argc, argv));
  return gw.run();
}
