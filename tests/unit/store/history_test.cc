// The embedded store's history (schema 2): every change remembers what its key held before,
// so the state at a kept revision can be read back for `sluice config rollback`.

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "store/schema.h"
#include "store_test_util.h"

namespace sluice::store {
namespace {

using State = std::map<std::string, std::optional<std::string>>;

State state_at(ConfigStore& s, int64_t revision) {
  auto rows = s.state_at(revision);
  EXPECT_TRUE(rows.is_ok()) << rows.status().message();
  State out;
  for (auto& [k, v] : rows.value()) {
    EXPECT_FALSE(out.contains(k)) << k << " twice";
    out[k] = v;
  }
  return out;
}

TEST(StoreHistory, EveryKindOfChangeIsRemembered) {
  TempDir dir;
  FakeClock clock;
  auto s = must_open(dir.path(), &clock);
  ASSERT_TRUE(s->put("/a", "a1", 0, std::nullopt).is_ok());                      // 1
  ASSERT_TRUE(s->put("/b", "b1", 0, std::nullopt).is_ok());                      // 2
  ASSERT_TRUE(s->put("/a", "a2", 0, std::nullopt).is_ok());                      // 3
  ASSERT_TRUE(s->remove("/b", std::nullopt).is_ok());                            // 4
  ASSERT_TRUE(s->apply_batch({{"/c", "c1", false}, {"/a", "", true}}).is_ok());  // 5, 6
  ASSERT_TRUE(s->put("/t", "t1", 5, std::nullopt).is_ok());                      // 7, expires
  clock.now += 10;
  ASSERT_EQ(s->expire(clock.now).value(), 1);  // 8
  ASSERT_EQ(s->revision(), 8);

  EXPECT_EQ(state_at(*s, 8), State{});
  EXPECT_EQ(state_at(*s, 7), (State{{"/t", "t1"}}));
  EXPECT_EQ(state_at(*s, 4), (State{{"/c", std::nullopt}, {"/a", "a2"}, {"/t", std::nullopt}}));
  EXPECT_EQ(state_at(*s, 2),
            (State{{"/a", "a1"}, {"/b", "b1"}, {"/c", std::nullopt}, {"/t", std::nullopt}}));
  EXPECT_EQ(
      state_at(*s, 0),
      (State{
          {"/a", std::nullopt}, {"/b", std::nullopt}, {"/c", std::nullopt}, {"/t", std::nullopt}}));
  auto future = s->state_at(9);
  ASSERT_FALSE(future.is_ok());
  EXPECT_EQ(future.status().message(),
            "revision 9 is not one of this store's (it is at revision 8)");
}

TEST(StoreHistory, KeptAcrossReopenAndTrimmedToItsWindow) {
  TempDir dir;
  {
    auto s = must_open(dir.path());
    std::vector<BatchOp> ops;
    for (int i = 0; i < kHistoryRevisions + 5; ++i) {
      ops.push_back({"/k" + std::to_string(i % 7), "v" + std::to_string(i), false});
    }
    ASSERT_TRUE(s->apply_batch(ops).is_ok());
  }
  auto s = must_open(dir.path());
  EXPECT_EQ(raw_sql(dir.db(), "SELECT count(*) FROM history"), std::to_string(kHistoryRevisions));
  EXPECT_EQ(state_at(*s, 5).size(), 7u);
  auto old = s->state_at(4);
  ASSERT_FALSE(old.is_ok());
  EXPECT_NE(old.status().message().find("reaches back to revision 5 only"), std::string::npos)
      << old.status().message();
}

TEST(StoreHistory, AVersionOneStoreGainsTheTableAndKeepsItsData) {
  TempDir dir;
  {
    auto s = must_open(dir.path());
    ASSERT_TRUE(s->put("/a", "a1", 0, std::nullopt).is_ok());
  }
  // As a version 1 store was: no history table.
  ASSERT_EQ(raw_sql(dir.db(), "DROP TABLE history; PRAGMA user_version = 1; PRAGMA user_version"),
            "1");
  auto s = must_open(dir.path());
  EXPECT_EQ(raw_sql(dir.db(), "PRAGMA user_version"), "2");
  EXPECT_EQ(s->get("/a").value()->value, "a1");
  auto before = s->state_at(0);  // nothing remembered from before the upgrade
  ASSERT_FALSE(before.is_ok());
  ASSERT_TRUE(s->put("/a", "a2", 0, std::nullopt).is_ok());
  EXPECT_EQ(state_at(*s, 1), (State{{"/a", "a1"}}));
}

TEST(StoreHistory, ARolledBackBatchLeavesNoHistory) {
  TempDir dir;
  auto s = must_open(dir.path());
  ASSERT_TRUE(s->put("/a", "a1", 0, std::nullopt).is_ok());
  // A trigger makes the batch's second write fail: the whole transaction rolls back.
  raw_sql(dir.db(),
          "CREATE TRIGGER no_b BEFORE INSERT ON kv WHEN NEW.key = '/b' "
          "BEGIN SELECT RAISE(ABORT, 'no b'); END;");
  ASSERT_FALSE(s->apply_batch({{"/a", "a2", false}, {"/b", "b1", false}}).is_ok());
  EXPECT_EQ(raw_sql(dir.db(), "SELECT count(*) FROM history"), "1");
  EXPECT_EQ(state_at(*s, 0), (State{{"/a", std::nullopt}}));
}

}  // namespace
}  // namespace sluice::store
