// The writer: lines wait in the buffer until it is full (one write of whole lines) or flushed,
// a reopen sends what was buffered to the moved file and the rest to the new one, and a failing
// file drops and counts lines without stopping the caller.

#include "accesslog/writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::accesslog {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t lines_in(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

class AccessLogWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-accesslog-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/access.log";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::shared_ptr<Config> config(std::string_view format, size_t buffer) {
    auto c = std::make_shared<Config>();
    c->path = path_;
    auto f = Format::compile(format, Escape::kDefault);
    EXPECT_TRUE(f.is_ok());
    c->format = std::move(f).value();
    c->buffer_size = buffer;
    return c;
  }

  Record rec(int status) {
    Record r;
    r.status = status;
    return r;
  }

  std::string dir_, path_;
};

TEST_F(AccessLogWriter, BuffersUntilFullThenWritesWholeLines) {
  Writer w(config("line $status", 40));  // "line 200\n" is 9 bytes
  EXPECT_TRUE(w.log(rec(200), 0));       // the first line: arm the flush timer
  EXPECT_FALSE(w.log(rec(201), 0));
  EXPECT_FALSE(w.log(rec(202), 0));
  EXPECT_FALSE(w.log(rec(203), 0));
  EXPECT_EQ(read_all(path_), "");  // 36 bytes buffered, nothing written
  EXPECT_EQ(w.stats().writes, 0u);
  EXPECT_FALSE(w.log(rec(204), 0));  // 45 bytes: written
  EXPECT_EQ(w.stats().writes, 1u);
  EXPECT_EQ(read_all(path_), "line 200\nline 201\nline 202\nline 203\nline 204\n");
  EXPECT_TRUE(w.log(rec(205), 0));  // the buffer is empty again: a new timer
  w.flush();
  EXPECT_EQ(w.stats().writes, 2u);
  EXPECT_EQ(w.stats().lines, 6u);
  w.flush();  // nothing buffered: no write
  EXPECT_EQ(w.stats().writes, 2u);
}

TEST_F(AccessLogWriter, LinesLongerThanTheBufferGoOutAtOnce) {
  Writer w(config("${status}" + std::string(100, 'x'), 16));
  EXPECT_FALSE(w.log(rec(200), 0));
  EXPECT_EQ(lines_in(read_all(path_)), 1u);
}

TEST_F(AccessLogWriter, DestructorFlushes) {
  {
    Writer w(config("$status", 16384));
    w.log(rec(200), 0);
    w.log(rec(404), 0);
  }
  EXPECT_EQ(read_all(path_), "200\n404\n");
}

TEST_F(AccessLogWriter, AppendsToWhatIsThere) {
  { std::ofstream(path_) << "earlier\n"; }
  Writer w(config("$status", 16384));
  w.log(rec(200), 0);
  w.flush();
  EXPECT_EQ(read_all(path_), "earlier\n200\n");
}

TEST_F(AccessLogWriter, ReopenAfterTheFileWasMoved) {
  Writer w(config("$status", 16384));
  w.log(rec(200), 0);
  w.flush();
  w.log(rec(201), 0);  // buffered while logrotate moves the file
  ASSERT_EQ(rename(path_.c_str(), (path_ + ".1").c_str()), 0);
  w.log(rec(202), 0);
  w.reopen();
  w.log(rec(203), 0);
  w.flush();
  EXPECT_EQ(read_all(path_ + ".1"), "200\n201\n202\n");
  EXPECT_EQ(read_all(path_), "203\n");
}

TEST_F(AccessLogWriter, TwoWritersOneFileNeverInterleave) {
  Writer a(config("a-$status-aaaaaaaaaaaaaaaa", 64));
  Writer b(config("b-$status-bbbbbbbbbbbbbbbb", 64));
  for (int i = 0; i < 1000; ++i) {
    a.log(rec(200 + i % 100), 0);
    b.log(rec(300 + i % 100), 0);
  }
  a.flush();
  b.flush();
  std::ifstream in(path_);
  std::string l;
  size_t n = 0;
  while (std::getline(in, l)) {
    ++n;
    EXPECT_TRUE(l.size() == 22 && (l.starts_with("a-") || l.starts_with("b-"))) << l;
  }
  EXPECT_EQ(n, 2000u);
}

TEST_F(AccessLogWriter, TimesFollowTheLoopsClock) {
  Writer w(config("$msec", 16384));
  w.log(rec(200), 5000);  // the wall clock is read: this line's time is now
  w.log(rec(200), 5250);  // 250 ms of the loop's clock later, not read again
  w.flush();
  std::istringstream in(read_all(path_));
  double first = 0, second = 0;
  in >> first >> second;
  EXPECT_NEAR(first, static_cast<double>(time(nullptr)), 5);
  EXPECT_NEAR(second - first, 0.250, 0.0005);
}

TEST_F(AccessLogWriter, FullDiskDropsAndCounts) {
  if (access("/dev/full", W_OK) != 0) {
    GTEST_SKIP() << "no writable /dev/full on this machine";
  }
  path_ = "/dev/full";
  Writer w(config("line $status", 20));
  for (int i = 0; i < 10; ++i) {
    w.log(rec(200), 0);  // every third line fills the buffer; its write fails
  }
  w.flush();
  EXPECT_EQ(w.stats().lines, 0u);
  EXPECT_EQ(w.stats().lost_lines, 10u);
  EXPECT_EQ(w.stats().writes, 4u);
  EXPECT_EQ(w.stats().write_errors, 4u);
}

TEST_F(AccessLogWriter, UnopenableFileDropsAndCounts) {
  path_ = dir_ + "/missing/access.log";
  Writer w(config("$status", 16384));
  EXPECT_FALSE(w.open());
  w.log(rec(200), 0);
  w.log(rec(201), 0);
  w.flush();
  EXPECT_EQ(w.stats().lost_lines, 2u);
  // The directory appears (an operator fixed it): a reopen brings the log back.
  ASSERT_EQ(mkdir((dir_ + "/missing").c_str(), 0755), 0);
  w.reopen();
  EXPECT_TRUE(w.open());
  w.log(rec(202), 0);
  w.flush();
  EXPECT_EQ(read_all(path_), "202\n");
}

}  // namespace
}  // namespace sluice::accesslog
