#include "bench/kit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "bench/commands.h"

namespace sluice::bench {

namespace {
constexpr const char* kPython = "/usr/bin/python3";
}  // namespace

std::vector<std::string> kit_candidates(const char* env_kit, const std::string& exe_dir) {
  std::vector<std::string> out;
  if (env_kit != nullptr && *env_kit != '\0') {
    out.emplace_back(env_kit);
  }
  out.push_back(exe_dir + "/../tools/bench/sluice_bench.py");
  out.push_back(exe_dir + "/../share/sluice/bench/sluice_bench.py");
  return out;
}

int kit_main(const std::vector<std::string>& args) {
  char exe[PATH_MAX];
  if (realpath("/proc/self/exe", exe) == nullptr) {
    fmt::print(stderr, "sluice bench: cannot resolve /proc/self/exe: {}\n", strerror(errno));
    return 2;
  }
  std::string exe_path(exe);
  std::string exe_dir = exe_path.substr(0, exe_path.rfind('/'));
  std::vector<std::string> tried = kit_candidates(std::getenv("SLUICE_BENCH_KIT"), exe_dir);
  std::string kit;
  for (const std::string& path : tried) {
    if (access(path.c_str(), R_OK) == 0) {
      kit = path;
      break;
    }
  }
  if (kit.empty()) {
    fmt::print(stderr,
               "sluice bench: the bench kit (sluice_bench.py) was not found; tried:\n  {}\n"
               "set SLUICE_BENCH_KIT to its path\n",
               fmt::join(tried, "\n  "));
    return 2;
  }
  setenv("SLUICE_BIN", exe, 1);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(kPython));
  argv.push_back(kit.data());
  for (const std::string& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  execv(kPython, argv.data());
  fmt::print(stderr, "sluice bench: cannot run {} {}: {}\n", kPython, kit, strerror(errno));
  return 2;
}

}  // namespace sluice::bench
