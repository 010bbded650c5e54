// The built-in rotation: due by size or by age (never for an empty or missing file), the
// numbered files shifted up with the oldest past `keep` removed, and the start-up check that
// makes the log's directory and refuses an unusable path.

#include "accesslog/rotation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::accesslog {
namespace {

namespace fs = std::filesystem;

class AccessLogRotation : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-rotation-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/access.log";
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_, path_;
};

TEST_F(AccessLogRotation, DueBySize) {
  RotateConfig c;
  c.max_size = 10;
  Rotator r(path_, c, 1000);
  EXPECT_FALSE(r.due(1000));  // no file
  write(path_, "123456789");
  EXPECT_FALSE(r.due(1000));
  write(path_, "1234567890");
  EXPECT_TRUE(r.due(1000));
}

TEST_F(AccessLogRotation, DueByAgeWhenNotEmpty) {
  RotateConfig c;
  c.max_time_s = 60;
  Rotator r(path_, c, 1000);
  write(path_, "");
  EXPECT_FALSE(r.due(2000));  // empty: nothing to rotate
  write(path_, "x\n");
  EXPECT_FALSE(r.due(1059));
  EXPECT_TRUE(r.due(1060));
  ASSERT_TRUE(r.rotate(1060).is_ok());
  write(path_, "y\n");
  EXPECT_FALSE(r.due(1100));  // the age counts from the rotation
  EXPECT_TRUE(r.due(1120));
}

TEST_F(AccessLogRotation, ShiftsAndKeeps) {
  RotateConfig c;
  c.max_size = 1;
  c.keep = 2;
  Rotator r(path_, c, 0);
  for (const char* text : {"first\n", "second\n", "third\n"}) {
    write(path_, text);
    ASSERT_TRUE(r.rotate(0).is_ok());
  }
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(read(path_ + ".1"), "third\n");
  EXPECT_EQ(read(path_ + ".2"), "second\n");
  EXPECT_FALSE(fs::exists(path_ + ".3"));  // "first" was past keep
}

TEST_F(AccessLogRotation, RotateFailsWithoutTheFile) {
  RotateConfig c;
  c.max_size = 1;
  Rotator r(path_, c, 0);
  auto s = r.rotate(0);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "cannot rename " + path_ + ": No such file or directory");
}

TEST_F(AccessLogRotation, FailureWaitsAMinute) {
  RotateConfig c;
  c.max_size = 1;
  Rotator r(path_, c, 0);
  ASSERT_FALSE(r.rotate(100).is_ok());  // no file yet
  write(path_, "x\n");
  EXPECT_FALSE(r.due(159));
  EXPECT_TRUE(r.due(160));
}

TEST_F(AccessLogRotation, PrepareMakesTheDirectory) {
  std::string path = dir_ + "/logs/access.log";
  ASSERT_TRUE(prepare_log_file(path).is_ok());
  EXPECT_TRUE(fs::is_regular_file(path));
  // Only one level, as APISIX makes logs/ and nothing above it.
  auto s = prepare_log_file(dir_ + "/a/b/access.log");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "cannot create " + dir_ + "/a/b: No such file or directory");
  write(dir_ + "/file", "");
  s = prepare_log_file(dir_ + "/file/access.log");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), dir_ + "/file is not a directory");
}

}  // namespace
}  // namespace sluice::accesslog
