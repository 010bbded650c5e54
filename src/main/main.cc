// sluice: the gateway's command line.

#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/gateway.h"

namespace {

constexpr const char* kUsage =
    "usage: sluice run [-c conf/config.yaml]   run the gateway in the foreground\n"
    "       sluice version                     print the version\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "version" || cmd == "--version" || cmd == "-v") {
    printf("sluice %s\n", SLUICE_VERSION);
    return 0;
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
  sluice::runtime::Gateway gw(config);
  return gw.run();
}
