// open_embedded(): the data directory and its lock, the database file, then the store.
#include <utility>

#include "store/data_dir.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace sluice::store {

using common::Status;
using common::StatusOr;

StatusOr<std::unique_ptr<ConfigStore>> open_embedded_with_clock(const std::string& dir,
                                                                UnixClock now) {
  auto data_dir = DataDir::open(dir);
  if (!data_dir) {
    return data_dir.status();
  }
  auto db = open_sluice_db(data_dir->file(DataDir::kDbFile));
  if (!db) {
    return db.status();
  }
  if (Status s = data_dir->sync(); !s) {  // the new database, WAL and lock files are durable
    return s;
  }
  auto store = SqliteStore::create(std::move(*data_dir), std::move(*db), std::move(now));
  if (!store) {
    return store.status();
  }
  return std::unique_ptr<ConfigStore>(std::move(*store));
}

StatusOr<std::unique_ptr<ConfigStore>> open_embedded(const std::string& dir) {
  return open_embedded_with_clock(dir, nullptr);
}

}  // namespace sluice::store
