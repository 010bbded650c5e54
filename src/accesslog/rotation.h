#pragma once
// Sluice's built-in rotation of the access log (sluice.access_log_rotate), an alternative to
// logrotate: when the file reaches max_size bytes or has been written for max_time seconds, it
// is renamed <path>.1 (an older <path>.1 becoming <path>.2, and so on; the one past `keep` is
// removed), and the workers are told to reopen the path, as on SIGUSR1.

#include <cstdint>
#include <string>

#include "common/status.h"

namespace sluice::accesslog {

// Thread: any (value type)
struct RotateConfig {
  uint64_t max_size = 0;    // bytes; 0: size does not rotate
  uint64_t max_time_s = 0;  // seconds; 0: age does not rotate
  uint32_t keep = 1;        // rotated files kept: <path>.1 .. <path>.<keep>; at least 1
  bool enabled() const { return max_size != 0 || max_time_s != 0; }
  bool operator==(const RotateConfig&) const = default;
};

// Thread: control
class Rotator {
 public:
  Rotator(std::string path, RotateConfig config, int64_t now_s)
      : path_(std::move(path)), config_(config), since_s_(now_s) {}
  // The file is due: over max_size, or written for max_time (and not empty).
  bool due(int64_t now_s) const;
  // Shifts the rotated files up and renames the file <path>.1. The workers must reopen next.
  // After a failure the file is not due again for a minute (no error every tick).
  common::Status rotate(int64_t now_s);
  const std::string& path() const { return path_; }

 private:
  std::string numbered(uint32_t n) const { return path_ + "." + std::to_string(n); }
  common::Status shift();

  std::string path_;
  RotateConfig config_;
  int64_t since_s_;  // when the file now at `path_` was started
  int64_t retry_at_s_ = 0;
};

// Makes sure `path` can be appended to: creates its directory when missing (one level, as
// APISIX's `apisix start` makes logs/) and the file. Errors name the path and the reason.
common::Status prepare_log_file(const std::string& path);

}  // namespace sluice::accesslog
