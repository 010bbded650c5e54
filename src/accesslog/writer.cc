#include "accesslog/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace sluice::accesslog {

namespace {

constexpr uint64_t kReportEveryMs = 10000;

uint64_t monotonic_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1000000;
}

}  // namespace

int open_for_append(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

Writer::Writer(std::shared_ptr<const Config> config) : config_(std::move(config)) {
  // Room for a full buffer and the line that fills it, so steady state never reallocates.
  buf_.reserve(config_->buffer_size + 4096);
  fd_ = open_for_append(config_->path);
  if (fd_ < 0) {
    lost(0, errno, "open");
  }
}

Writer::~Writer() {
  flush();
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

bool Writer::log(const Record& r, uint64_t now_ms) {
  if (!clock_read_ || now_ms - clock_ms_ >= 1000) {
    timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t wall_ms = static_cast<int64_t>(wall.tv_sec) * 1000 + wall.tv_nsec / 1000000;
    wall_offset_ms_ = wall_ms - static_cast<int64_t>(now_ms);
    clock_ms_ = now_ms;
    clock_read_ = true;
  }
  int64_t ms = static_cast<int64_t>(now_ms) + wall_offset_ms_;
  timespec now{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000};
  const bool first = buf_.empty();
  renderer_.render(config_->format, r, now, &buf_);
  ++buffered_lines_;
  if (buf_.size() >= config_->buffer_size) {
    flush();
    return false;
  }
  return first;
}

void Writer::flush() {
  if (buf_.empty()) {
    return;
  }
  if (fd_ < 0) {
    lost(buffered_lines_, EBADF, "write");
  } else {
    ssize_t n;
    do {
      n = ::write(fd_, buf_.data(), buf_.size());
    } while (n < 0 && errno == EINTR);
    ++stats_.writes;
    if (n == static_cast<ssize_t>(buf_.size())) {
      stats_.lines += buffered_lines_;
    } else {
      // A short write (a full disk) lands the lines before its end; the rest is dropped rather
      // than written later, where another worker's lines may have come in between.
      int err = n < 0 ? errno : ENOSPC;
      uint64_t whole = n <= 0 ? 0 : std::count(buf_.data(), buf_.data() + n, '\n');
      stats_.lines += whole;
      lost(buffered_lines_ - whole, err, "write");
    }
  }
  buf_.clear();
  buffered_lines_ = 0;
}

void Writer::reopen() {
  flush();
  int fd = open_for_append(config_->path);
  if (fd < 0) {
    lost(0, errno, "reopen");
    return;
  }
  if (fd_ >= 0) {
    ::close(fd_);
  }
  fd_ = fd;
}

void Writer::lost(uint64_t lines, int err, const char* what) {
  ++stats_.write_errors;
  stats_.lost_lines += lines;
  lost_since_report_ += lines;
  uint64_t now = monotonic_ms();
  if (reported_ms_ != 0 && now - reported_ms_ < kReportEveryMs) {
    return;
  }
  reported_ms_ = now;
  SLUICE_LOG(kError, "access log {}: {} failed: {}; {} line(s) lost since the last report",
             config_->path, what, strerror(err), lost_since_report_);
  lost_since_report_ = 0;
}

}  // namespace sluice::accesslog
