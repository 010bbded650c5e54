#include "common/inherited_fds.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace sluice::common {

namespace {

std::vector<int> read_env() {
  std::vector<int> fds;
  const char* text = std::getenv(kInheritedFdsEnv);
  if (text == nullptr) {
    return fds;
  }
  std::string s(text);
  unsetenv(kInheritedFdsEnv);  // not for whatever this process starts in turn
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? s.size() : comma + 1;
    char* end = nullptr;
    long fd = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || fd < 3 || fd > 1 << 20) {
      continue;
    }
    int flags = fcntl(static_cast<int>(fd), F_GETFD);
    if (flags < 0) {
      continue;
    }
    fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
    fds.push_back(static_cast<int>(fd));
  }
  return fds;
}

}  // namespace

std::vector<int>& inherited_fds() {
  static std::vector<int> fds = read_env();
  return fds;
}

void take_inherited_fd(int fd) { std::erase(inherited_fds(), fd); }

void close_started_fd() {
  const char* text = std::getenv(kStartedFdEnv);
  if (text == nullptr) {
    return;
  }
  char* end = nullptr;
  long fd = std::strtol(text, &end, 10);
  unsetenv(kStartedFdEnv);
  if (*end == '\0' && fd > 2 && fd < (1 << 20)) {
    ::close(static_cast<int>(fd));
  }
}

}  // namespace sluice::common
