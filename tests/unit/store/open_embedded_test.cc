// Opening the embedded store: persistence across reopen, the files it refuses, and the lock.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>

#include "store/store.h"
#include "store_test_util.h"

namespace sluice::store {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string random_bytes(size_t n) {
  std::mt19937 rng(42);
  std::string out(n, '\0');
  for (char& c : out) {
    c = static_cast<char>(rng());
  }
  return out;
}

TEST(OpenEmbedded, CreatesTheDirectoryAndPersistsAcrossReopen) {
  TempDir tmp;
  const std::string dir = tmp.file("data");
  {
    auto store = must_open(dir);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->put("/apisix/routes/1", R"({"uri":"/"})", 0, std::nullopt).is_ok());
    ASSERT_TRUE(store->put("/apisix/routes/1", R"({"uri":"/x"})", 0, std::nullopt).is_ok());
  }
  EXPECT_EQ(raw_sql(dir + "/sluice.db", "PRAGMA application_id"), "1399616867");  // "Sluc"
  EXPECT_EQ(raw_sql(dir + "/sluice.db", "PRAGMA user_version"), "2");
  EXPECT_EQ(raw_sql(dir + "/sluice.db", "PRAGMA journal_mode"), "wal");
  auto store = must_open(dir);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->revision(), 2);
  auto got = store->get("/apisix/routes/1");
  ASSERT_TRUE(got.is_ok() && *got);
  EXPECT_EQ((*got)->value, R"({"uri":"/x"})");
  EXPECT_EQ((*got)->create_revision, 1);
  EXPECT_EQ((*got)->mod_revision, 2);
  EXPECT_TRUE(store->take_changes().empty());  // the feed holds this process's writes only
}

TEST(OpenEmbedded, RevisionNeverRepeatsAcrossReopenDeletesAndExpiry) {
  TempDir dir;
  FakeClock clock;
  {
    auto store = must_open(dir.path(), &clock);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->put("/a", "1", 0, std::nullopt).is_ok());
    ASSERT_TRUE(store->put("/b", "2", 0, std::nullopt).is_ok());
    ASSERT_TRUE(store->remove("/b", std::nullopt).is_ok());
    ASSERT_TRUE(store->put("/t", "3", 1, std::nullopt).is_ok());
  }
  {
    auto store = must_open(dir.path(), &clock);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->revision(), 4);
    EXPECT_EQ(store->next_expiry(), clock.now + 1);
    EXPECT_EQ(*store->expire(clock.now + 1), 1);             // revision 5
    ASSERT_TRUE(store->remove("/a", std::nullopt).is_ok());  // 6: the store is empty now
  }
  auto store = must_open(dir.path(), &clock);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->revision(), 6);
  auto b = store->put("/b", "again", 0, std::nullopt);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->create_revision, 7);
}

// Each case prepares <dir>/sluice.db; the open must fail with `error` ({db} = the file path)
// and leave the file as it was.
struct RefusalCase {
  const char* name;
  std::function<void(const TempDir&)> prepare;
  std::string error;
};

void make_sluice_db(const TempDir& dir, int entries) {
  auto store = must_open(dir.path());
  for (int i = 0; i < entries; ++i) {
    std::string key = "/apisix/routes/" + std::to_string(i);
    ASSERT_TRUE(store->put(key, std::string(3000, 'v'), 0, std::nullopt).is_ok());
  }
}

std::string substitute(std::string text, const std::string& db) {
  for (size_t at; (at = text.find("{db}")) != std::string::npos;) {
    text.replace(at, 4, db);
  }
  return text;
}

TEST(OpenEmbedded, RefusesFilesThatAreNotSluiceDatabases) {
  const RefusalCase cases[] = {
      {"zero-length file (truncated)", [](const TempDir& d) { write_file(d.db(), ""); },
       "{db} is empty (0 bytes): a truncated database, not a Sluice store; restore it from a "
       "backup, or remove it to start with an empty store"},
      {"garbage", [](const TempDir& d) { write_file(d.db(), random_bytes(8192)); },
       "{db} is not a SQLite database (file is not a database)"},
      {"foreign application_id",
       [](const TempDir& d) { raw_sql(d.db(), "PRAGMA application_id = 42; CREATE TABLE t (x);"); },
       "{db} is not a Sluice database (application_id 0x2a, expected 0x536c7563); move it away "
       "or use another data directory"},
      {"plain SQLite with tables",
       [](const TempDir& d) { raw_sql(d.db(), "CREATE TABLE kv (key TEXT);"); },
       "{db} is not a Sluice database (application_id 0x0, expected 0x536c7563); move it away "
       "or use another data directory"},
      {"newer schema",
       [](const TempDir& d) {
         make_sluice_db(d, 1);
         raw_sql(d.db(), "PRAGMA user_version = 3");
       },
       "{db} has schema version 3, newer than this Sluice supports (2); run a newer Sluice"},
      {"unknown schema version",
       [](const TempDir& d) {
         make_sluice_db(d, 1);
         raw_sql(d.db(), "PRAGMA user_version = 0");
       },
       "{db} has unknown schema version 0"},
  };
  for (const RefusalCase& c : cases) {
    TempDir dir;
    c.prepare(dir);
    const std::string before = read_file(dir.db());
    auto store = open_embedded(dir.path());
    ASSERT_FALSE(store.is_ok()) << c.name;
    EXPECT_EQ(store.status().message(), substitute(c.error, dir.db())) << c.name;
    EXPECT_EQ(read_file(dir.db()), before) << c.name << ": the refused file was modified";
  }
}

TEST(OpenEmbedded, RefusesACorruptDatabase) {
  TempDir dir;
  make_sluice_db(dir, 30);  // closed: the WAL is checkpointed into the file
  std::string bytes = read_file(dir.db());
  ASSERT_GT(bytes.size(), 8 * 4096u);
  const std::string noise = random_bytes(bytes.size() - 4096);
  bytes.replace(4096, noise.size(), noise);  // every page after the first
  write_file(dir.db(), bytes);
  auto store = open_embedded(dir.path());
  ASSERT_FALSE(store.is_ok());
  EXPECT_THAT(store.status().message(), StartsWith(dir.db() + " is corrupt ("));
  EXPECT_THAT(store.status().message(), HasSubstr("restore it from a backup"));
}

TEST(OpenEmbedded, RefusesADataDirectoryThatIsAFile) {
  TempDir tmp;
  const std::string dir = tmp.file("not-a-dir");
  write_file(dir, "x");
  auto store = open_embedded(dir);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.status().message(), "data directory " + dir + " exists and is not a directory");
}

TEST(OpenEmbedded, RefusesADataDirectoryInUse) {
  TempDir dir;
  const std::string in_use = "data directory " + dir.path() +
                             " is in use by another process (it holds the lock on " +
                             dir.file("sluice.db.lock") + ")";
  auto first = must_open(dir.path());
  ASSERT_NE(first, nullptr);
  auto second = open_embedded(dir.path());
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().message(), in_use);

  // Another process sees the same; it reports through its exit status.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto other = open_embedded(dir.path());
    _exit(!other.is_ok() && other.status().message() == in_use ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  first.reset();
  EXPECT_NE(must_open(dir.path()), nullptr);  // the lock went with the first store
}

}  // namespace
}  // namespace sluice::store
