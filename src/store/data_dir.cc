#include "store/data_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/inherited_fds.h"

namespace sluice::store {

using common::Status;
using common::StatusOr;

namespace {

std::string errno_text() { return std::strerror(errno); }

Status fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return Status::error(fmt::format("cannot open directory {}: {}", dir, errno_text()));
  }
  const int rc = ::fsync(fd);
  const std::string why = rc != 0 ? errno_text() : std::string();
  ::close(fd);
  if (rc != 0) {
    return Status::error(fmt::format("cannot fsync directory {}: {}", dir, why));
  }
  return Status::ok();
}

// mkdir with the new entry made durable in its parent; an existing directory is fine.
Status ensure_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
    if (!path.has_filename()) {
      path = path.parent_path();  // "a/b/" names "a/b"
    }
    const std::string parent = path.parent_path().string();
    return fsync_dir(parent.empty() ? "." : parent);
  }
  if (errno != EEXIST) {
    return Status::error(fmt::format("cannot create data directory {}: {}", dir, errno_text()));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::error(fmt::format("data directory {} exists and is not a directory", dir));
  }
  return Status::ok();
}

// At a binary upgrade the old Sluice hands on its lock descriptor: the lock belongs to that
// open file description, so the new process holds it too and takes over when the old exits.
void adopt_inherited_lock(int* lock_fd) {
  struct stat mine;
  if (::fstat(*lock_fd, &mine) != 0) {
    return;
  }
  for (int fd : common::inherited_fds()) {
    struct stat theirs;
    if (::fstat(fd, &theirs) == 0 && theirs.st_dev == mine.st_dev && theirs.st_ino == mine.st_ino) {
      common::take_inherited_fd(fd);
      ::close(*lock_fd);
      *lock_fd = fd;
      return;
    }
  }
}

}  // namespace

StatusOr<DataDir> DataDir::open(const std::string& dir) {
  if (dir.empty()) {
    return Status::error("data directory must not be empty");
  }
  if (Status s = ensure_dir(dir); !s) {
    return s;
  }
  DataDir result(dir);
  const std::string lock_path = result.file(kLockFile);
  result.lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (result.lock_fd_ < 0) {
    return Status::error(fmt::format("cannot open lock file {}: {}", lock_path, errno_text()));
  }
  adopt_inherited_lock(&result.lock_fd_);
  int rc;
  do {
    rc = ::flock(result.lock_fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0 && errno == EWOULDBLOCK) {
    return Status::error(
        fmt::format("data directory {} is in use by another process (it holds the lock on {})", dir,
                    lock_path));
  }
  if (rc != 0) {
    return Status::error(fmt::format("cannot lock {}: {}", lock_path, errno_text()));
  }
  return result;
}

DataDir::DataDir(DataDir&& other) noexcept
    : dir_(std::move(other.dir_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

DataDir& DataDir::operator=(DataDir&& other) noexcept {
  if (this != &other) {
    close_lock();
    dir_ = std::move(other.dir_);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

DataDir::~DataDir() { close_lock(); }

void DataDir::close_lock() {
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);  // releases the flock
    lock_fd_ = -1;
  }
}

std::string DataDir::file(std::string_view name) const {
  std::string path = dir_;
  if (path.back() != '/') {
    path.push_back('/');
  }
  path.append(name);
  return path;
}

Status DataDir::sync() const { return fsync_dir(dir_); }

}  // namespace sluice::store
