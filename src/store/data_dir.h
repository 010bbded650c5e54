#pragma once
// The store's data directory: created when missing, and locked so that a second process cannot
// open the same database while this one holds it.

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::store {

// A data directory held with an exclusive flock on `<dir>/sluice.db.lock` for this object's life.
// The lock belongs to the open file description, so a second open in the same process is
// refused too; a fork()ed child shares it until it closes the descriptor.
// Thread: control (one owner)
class DataDir {
 public:
  static constexpr const char* kLockFile = "sluice.db.lock";  // inside the directory
  static constexpr const char* kDbFile = "sluice.db";         // the embedded store's database

  // Creates `dir` (one level, mode 0700) when missing and takes the lock.
  static common::StatusOr<DataDir> open(const std::string& dir);

  DataDir(DataDir&& other) noexcept;
  DataDir& operator=(DataDir&& other) noexcept;
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;
  ~DataDir();

  const std::string& path() const { return dir_; }
  // `<dir>/<name>`.
  std::string file(std::string_view name) const;
  // fsyncs the directory, so the files just created in it survive a power loss.
  common::Status sync() const;

 private:
  explicit DataDir(std::string dir) : dir_(std::move(dir)) {}
  void close_lock();

  std::string dir_;
  int lock_fd_ = -1;
};

}  // namespace sluice::store
