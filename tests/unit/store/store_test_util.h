#pragma once
// Helpers for the store's tests: a temporary data directory, a clock the test moves, and raw
// SQL on a database file the store does not hold.

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "store/store.h"

namespace sluice::store {

// A fresh directory under $TMPDIR, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sluice-store-XXXXXX");
    if (::mkdtemp(pattern.data()) != nullptr) {
      path_ = pattern;
    }
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string db() const { return file("sluice.db"); }

 private:
  std::string path_;
};

// Unix seconds that only move when the test says so.
struct FakeClock {
  int64_t now = 1'700'000'000;
  UnixClock fn() {
    return [this] { return now; };
  }
};

inline std::unique_ptr<ConfigStore> must_open(const std::string& dir, FakeClock* clock = nullptr) {
  auto store = clock != nullptr ? open_embedded_with_clock(dir, clock->fn()) : open_embedded(dir);
  EXPECT_TRUE(store.is_ok()) << store.status().message();
  return store.is_ok() ? std::move(*store) : nullptr;
}

// Runs `sql` on the file at `path` through a connection of its own; returns the first column
// of the last row produced, or "error: <message>".
inline std::string raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    out = std::string("error: ") + sqlite3_errmsg(db);
    sqlite3_close(db);
    return out;
  }
  auto keep = [](void* arg, int n, char** values, char**) {
    *static_cast<std::string*>(arg) = n > 0 && values[0] != nullptr ? values[0] : "";
    return 0;
  };
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), keep, &out, &error) != SQLITE_OK) {
    out = std::string("error: ") + (error != nullptr ? error : "?");
    sqlite3_free(error);
  }
  sqlite3_close(db);
  return out;
}

}  // namespace sluice::store
