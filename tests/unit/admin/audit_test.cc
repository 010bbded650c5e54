// The audit log's listing reads the file's end backwards in blocks: complete lines only (a
// line still being written is left out), the last N in order, across block boundaries.

#include "admin/audit.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace sluice::admin {
namespace {

using Json = nlohmann::json;

struct TempFile {
  TempFile() {
    std::string pattern = std::filesystem::temp_directory_path() / "sluice-audit-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    ::close(fd);
    path = pattern;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

Json list(const std::string& path, const std::string& query) {
  AuditLog log(path);
  server::AdminRequest req;
  req.method = "GET";
  req.query = query;
  auto r = log.list(req);
  EXPECT_EQ(r.status, 200) << r.body;
  return Json::parse(r.body);
}

TEST(AdminAudit, LastLinesAcrossBlocksWithoutATornOne) {
  TempFile f;
  {
    std::ofstream out(f.path);
    const std::string pad(700, 'x');  // 200 records of ~720 bytes: the file spans 3 blocks
    for (int i = 0; i < 200; ++i) {
      out << Json{{"n", i}, {"pad", pad}}.dump() << "\n";
    }
    out << R"({"n": 200, "pad": "cut sh)";  // being written
  }
  Json all = list(f.path, "limit=1000");
  ASSERT_EQ(all["total"], 200);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(all["list"][i]["n"], i);
  }
  Json last = list(f.path, "limit=3");
  ASSERT_EQ(last["total"], 3);
  EXPECT_EQ(last["list"][0]["n"], 197);
  EXPECT_EQ(last["list"][2]["n"], 199);
  Json some = list(f.path, "limit=150");  // the block boundary falls inside a record
  ASSERT_EQ(some["total"], 150);
  EXPECT_EQ(some["list"][0]["n"], 50);
}

TEST(AdminAudit, MissingOrEmptyFileListsNothing) {
  EXPECT_EQ(list("/nonexistent-dir/audit.log", "")["total"], 0);
  TempFile f;
  EXPECT_EQ(list(f.path, "")["total"], 0);
}

}  // namespace
}  // namespace sluice::admin
