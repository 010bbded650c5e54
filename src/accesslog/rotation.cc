#include "accesslog/rotation.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "accesslog/writer.h"

namespace sluice::accesslog {

using common::Status;

bool Rotator::due(int64_t now_s) const {
  if (now_s < retry_at_s_) {
    return false;
  }
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0 || st.st_size == 0) {
    return false;  // not reopened yet after the last rotation, or nothing written
  }
  if (config_.max_size != 0 && static_cast<uint64_t>(st.st_size) >= config_.max_size) {
    return true;
  }
  return config_.max_time_s != 0 && now_s - since_s_ >= static_cast<int64_t>(config_.max_time_s);
}

Status Rotator::rotate(int64_t now_s) {
  Status s = shift();
  if (s.is_ok()) {
    since_s_ = now_s;
  } else {
    retry_at_s_ = now_s + 60;
  }
  return s;
}

Status Rotator::shift() {
  std::string last = numbered(config_.keep);
  if (::unlink(last.c_str()) != 0 && errno != ENOENT) {
    return Status::error(fmt::format("cannot remove {}: {}", last, strerror(errno)));
  }
  for (uint32_t n = config_.keep; n > 1; --n) {
    std::string from = numbered(n - 1);
    if (::rename(from.c_str(), numbered(n).c_str()) != 0 && errno != ENOENT) {
      return Status::error(fmt::format("cannot rename {}: {}", from, strerror(errno)));
    }
  }
  if (::rename(path_.c_str(), numbered(1).c_str()) != 0) {
    return Status::error(fmt::format("cannot rename {}: {}", path_, strerror(errno)));
  }
  return Status::ok();
}

Status prepare_log_file(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash != 0) {
    std::string dir = path.substr(0, slash);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) {
      if (::mkdir(dir.c_str(), 0755) != 0) {
        return Status::error(fmt::format("cannot create {}: {}", dir, strerror(errno)));
      }
    } else if (!S_ISDIR(st.st_mode)) {
      return Status::error(fmt::format("{} is not a directory", dir));
    }
  }
  int fd = open_for_append(path);
  if (fd < 0) {
    return Status::error(fmt::format("open() \"{}\" failed: {}", path, strerror(errno)));
  }
  ::close(fd);
  return Status::ok();
}

}  // namespace sluice::accesslog
