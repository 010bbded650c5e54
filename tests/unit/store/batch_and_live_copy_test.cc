// apply_batch: every op of a batch lands in one transaction, or none does; read_live_copy: the
// store read beside a running owner, without its lock, as of one revision.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/live_read.h"
#include "store/store.h"
#include "store_test_util.h"

namespace sluice::store {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<std::string> keys_of(const std::vector<Entry>& entries) {
  std::vector<std::string> out;
  for (const Entry& e : entries) {
    out.push_back(e.key);
  }
  return out;
}

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = must_open(dir_.path(), &clock_);
    ASSERT_NE(store_, nullptr);
  }
  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<ConfigStore> store_;
};

TEST_F(BatchTest, EveryOpLandsWithItsOwnRevisionAndChange) {
  ASSERT_TRUE(store_->put("/apisix/routes/old", "{}", 0, std::nullopt).is_ok());
  ASSERT_TRUE(store_->put("/apisix/routes/keep", "{\"v\":1}", 0, std::nullopt).is_ok());
  (void)store_->take_changes();
  const int64_t before = store_->revision();
  std::vector<BatchOp> ops = {{"/apisix/upstreams/u", "{\"u\":1}", false},
                              {"/apisix/routes/keep", "{\"v\":2}", false},
                              {"/apisix/routes/old", "", true},
                              {"/apisix/routes/never", "", true}};  // absent: no change
  ASSERT_TRUE(store_->apply_batch(ops).is_ok());
  EXPECT_EQ(store_->revision(), before + 3);
  auto changes = store_->take_changes();
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].entry.key, "/apisix/upstreams/u");
  EXPECT_EQ(changes[0].entry.mod_revision, before + 1);
  EXPECT_EQ(changes[1].entry.key, "/apisix/routes/keep");
  EXPECT_EQ(changes[1].entry.create_revision, before);  // kept: the key existed
  EXPECT_TRUE(changes[2].deleted);
  auto keep = store_->get("/apisix/routes/keep");
  ASSERT_TRUE(keep.is_ok() && *keep);
  EXPECT_EQ((*keep)->value, "{\"v\":2}");
  auto gone = store_->get("/apisix/routes/old");
  ASSERT_TRUE(gone.is_ok());
  EXPECT_FALSE(*gone);
}

TEST_F(BatchTest, AFailureMidwayLeavesNothingOfTheBatch) {
  ASSERT_TRUE(store_->put("/apisix/routes/a", "{\"v\":1}", 0, std::nullopt).is_ok());
  (void)store_->take_changes();
  const int64_t before = store_->revision();
  // The third write fails inside the transaction, after two have been written.
  ASSERT_EQ(raw_sql(dir_.db(),
                    "CREATE TRIGGER refuse BEFORE INSERT ON kv WHEN NEW.key = '/apisix/routes/c' "
                    "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;"),
            "");
  std::vector<BatchOp> ops = {{"/apisix/routes/a", "{\"v\":2}", false},
                              {"/apisix/routes/b", "{}", false},
                              {"/apisix/routes/c", "{}", false}};
  auto st = store_->apply_batch(ops);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(store_->revision(), before);
  EXPECT_THAT(store_->take_changes(), IsEmpty());
  auto list = store_->list("/apisix/routes/");
  ASSERT_TRUE(list.is_ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].value, "{\"v\":1}");
  EXPECT_EQ(raw_sql(dir_.db(), "SELECT value FROM meta WHERE name = 'revision'"),
            std::to_string(before));
  // The store goes on: a later batch without the refused key lands.
  ASSERT_EQ(raw_sql(dir_.db(), "DROP TRIGGER refuse;"), "");
  ASSERT_TRUE(store_->apply_batch({ops[1]}).is_ok());
  EXPECT_EQ(store_->revision(), before + 1);
}

TEST_F(BatchTest, ABadKeyRefusesTheBatchBeforeAnyWrite) {
  const int64_t before = store_->revision();
  auto st = store_->apply_batch({{"/apisix/routes/a", "{}", false}, {"", "{}", false}});
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(store_->revision(), before);
  EXPECT_THAT(keys_of(*store_->list("/")), IsEmpty());
}

TEST_F(BatchTest, LiveCopyReadsBesideTheOwnerAsOfOneRevision) {
  ASSERT_TRUE(store_->put("/apisix/routes/1", "{\"a\":1}", 0, std::nullopt).is_ok());
  ASSERT_TRUE(store_->put("/apisix/routes/2", "{\"a\":2}", 0, std::nullopt).is_ok());
  ASSERT_TRUE(store_->put("/apisix/routes/ttl", "{}", 5, std::nullopt).is_ok());
  // store_ holds the data directory's lock: a second open_embedded would be refused.
  auto copy = read_live_copy(dir_.path(), clock_.now);
  ASSERT_TRUE(copy.is_ok()) << copy.status().message();
  EXPECT_EQ(copy->revision, store_->revision());
  EXPECT_EQ(
      keys_of(copy->entries),
      (std::vector<std::string>{"/apisix/routes/1", "/apisix/routes/2", "/apisix/routes/ttl"}));
  // An expired entry is not live, even before the owner sweeps it.
  copy = read_live_copy(dir_.path(), clock_.now + 10);
  ASSERT_TRUE(copy.is_ok());
  EXPECT_EQ(copy->entries.size(), 2u);
  ASSERT_TRUE(store_->put("/apisix/routes/3", "{}", 0, std::nullopt).is_ok());
  copy = read_live_copy(dir_.path(), clock_.now);
  ASSERT_TRUE(copy.is_ok());
  EXPECT_EQ(copy->revision, store_->revision());
  EXPECT_EQ(copy->entries.size(), 4u);
}

TEST(LiveCopy, RefusesWhatIsNotAStore) {
  TempDir dir;
  auto missing = read_live_copy(dir.path(), 0);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("sluice.db"));
  ASSERT_EQ(raw_sql(dir.db(), "CREATE TABLE t (x); INSERT INTO t VALUES (1);"), "");
  auto foreign = read_live_copy(dir.path(), 0);
  ASSERT_FALSE(foreign.is_ok());
  EXPECT_THAT(foreign.status().message(), HasSubstr("not a Sluice database"));
}

}  // namespace
}  // namespace sluice::store
