// Replays fuzz inputs without libFuzzer: runs LLVMFuzzerTestOneInput once on every file named
// on the command line or found (recursively) in a directory named there. Linked with each
// target in the normal build, so `ctest` replays the checked-in corpora with any compiler.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool read_file(const fs::path& path, std::vector<char>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Runs one input from an exact-size heap copy, as libFuzzer does, so ASan builds catch reads
// past its end.
void run(const std::vector<char>& bytes) {
  auto copy = std::make_unique<uint8_t[]>(bytes.size());
  std::copy(bytes.begin(), bytes.end(), copy.get());
  LLVMFuzzerTestOneInput(copy.get(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <file or directory>...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i])) {
        if (e.is_regular_file()) {
          files.push_back(e.path());
        }
      }
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "%s: not a file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    // An empty corpus would make the test pass while checking nothing.
    std::fprintf(stderr, "no inputs found\n");
    return 1;
  }
  std::vector<char> bytes;
  for (const fs::path& f : files) {
    if (!read_file(f, &bytes)) {
      std::fprintf(stderr, "%s: cannot read\n", f.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s\n", f.c_str());  // names the input if the next call aborts
    run(bytes);
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
