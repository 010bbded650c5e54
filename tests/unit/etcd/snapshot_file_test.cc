// The persisted last-known-good configuration: round trip, and refusal of every damage.

#include "etcd/snapshot_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::etcd {
namespace {

class SnapshotFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-snapfile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/etcd-snapshot.json";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string read() {
    std::ifstream f(path_, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  void write(const std::string& text) {
    std::ofstream f(path_, std::ios::binary | std::ios::trunc);
    f << text;
  }
  PersistedSet sample() {
    PersistedSet s;
    s.prefix = "/apisix";
    s.revision = 42;
    s.entries.push_back({"/apisix/routes/1", R"({"uri":"/a","id":"1"})", 3, 40, 0});
    s.entries.push_back({"/apisix/upstreams/u\n", "{\"nodes\":{}}\x01", 5, 41, 0});
    return s;
  }

  std::string dir_, path_;
};

TEST_F(SnapshotFileTest, RoundTrip) {
  ASSERT_TRUE(write_snapshot_file(path_, sample()));
  auto got = read_snapshot_file(path_);
  ASSERT_TRUE(got) << got.status().message();
  EXPECT_EQ(got->prefix, "/apisix");
  EXPECT_EQ(got->revision, 42);
  ASSERT_EQ(got->entries.size(), 2u);
  EXPECT_EQ(got->entries[0].key, "/apisix/routes/1");
  EXPECT_EQ(got->entries[0].value, R"({"uri":"/a","id":"1"})");
  EXPECT_EQ(got->entries[0].create_revision, 3);
  EXPECT_EQ(got->entries[0].mod_revision, 40);
  EXPECT_EQ(got->entries[1].key, "/apisix/upstreams/u\n");
  EXPECT_EQ(got->entries[1].value, "{\"nodes\":{}}\x01");
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
}

TEST_F(SnapshotFileTest, EveryFlippedByteIsRefused) {
  ASSERT_TRUE(write_snapshot_file(path_, sample()));
  std::string good = read();
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    write(bad);
    EXPECT_FALSE(read_snapshot_file(path_)) << "byte " << i;
  }
}

TEST_F(SnapshotFileTest, TruncatedOrExtendedIsRefused) {
  ASSERT_TRUE(write_snapshot_file(path_, sample()));
  std::string good = read();
  write(good.substr(0, good.size() - 1));
  auto r = read_snapshot_file(path_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("refused"), std::string::npos);
  write(good + " ");
  EXPECT_FALSE(read_snapshot_file(path_));
  write("");
  EXPECT_FALSE(read_snapshot_file(path_));
  write("{\"prefix\":\"/apisix\",\"revision\":1,\"entries\":[]}");
  r = read_snapshot_file(path_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("not a Sluice etcd snapshot"), std::string::npos);
}

TEST_F(SnapshotFileTest, MissingFileNamesIt) {
  auto r = read_snapshot_file(dir_ + "/none.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("none.json"), std::string::npos);
}

TEST_F(SnapshotFileTest, RewriteReplacesAtomically) {
  ASSERT_TRUE(write_snapshot_file(path_, sample()));
  PersistedSet s = sample();
  s.revision = 43;
  s.entries.pop_back();
  ASSERT_TRUE(write_snapshot_file(path_, s));
  auto got = read_snapshot_file(path_);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->revision, 43);
  EXPECT_EQ(got->entries.size(), 1u);
}

TEST_F(SnapshotFileTest, UnwritableDirectoryIsAnError) {
  auto st = write_snapshot_file(dir_ + "/no/such/dir/f.json", sample());
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("f.json"), std::string::npos);
}

}  // namespace
}  // namespace sluice::etcd
