// The store's operations: revisions, expectations, TTLs, listing, the change feed, and that a
// failed write changes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "store/store.h"
#include "store_test_util.h"

namespace sluice::store {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = must_open(dir_.path(), &clock_);
    ASSERT_NE(store_, nullptr);
  }

  Entry put_ok(const std::string& key, const std::string& value, int64_t ttl = 0) {
    auto r = store_->put(key, value, ttl, std::nullopt);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? *r : Entry{};
  }
  std::optional<Entry> get_ok(const std::string& key) {
    auto r = store_->get(key);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.is_ok() ? *r : std::nullopt;
  }
  std::vector<std::string> keys(const std::string& prefix) {
    auto r = store_->list(prefix);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    std::vector<std::string> out;
    for (const Entry& e : r.is_ok() ? *r : std::vector<Entry>{}) {
      out.push_back(e.key);
    }
    return out;
  }

  TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<ConfigStore> store_;
};

TEST_F(StoreTest, PutAssignsRevisionsAndGetReadsBack) {
  EXPECT_EQ(store_->revision(), 0);
  EXPECT_EQ(get_ok("/apisix/routes/1"), std::nullopt);
  Entry a = put_ok("/apisix/routes/1", R"({"uri":"/a"})");
  EXPECT_EQ(a.key, "/apisix/routes/1");
  EXPECT_EQ(a.create_revision, 1);
  EXPECT_EQ(a.mod_revision, 1);
  EXPECT_EQ(a.expire_at, 0);
  EXPECT_EQ(put_ok("/apisix/routes/2", "{}").mod_revision, 2);
  EXPECT_EQ(store_->revision(), 2);
  auto got = get_ok("/apisix/routes/1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->value, R"({"uri":"/a"})");
  EXPECT_EQ(got->mod_revision, 1);
}

TEST_F(StoreTest, OverwriteKeepsCreateRevision) {
  put_ok("/a", "1");
  put_ok("/b", "2");
  Entry again = put_ok("/a", "3");
  EXPECT_EQ(again.create_revision, 1);
  EXPECT_EQ(again.mod_revision, 3);
  EXPECT_EQ(get_ok("/a")->value, "3");
  EXPECT_EQ(get_ok("/a")->create_revision, 1);
}

TEST_F(StoreTest, ValuesAndKeysAreStoredVerbatim) {
  const std::string cases[] = {"",
                               "not json {",
                               std::string("nul\0inside", 10),
                               "caf\xc3\xa9",
                               "\xff\xfe invalid utf-8",
                               std::string(100000, 'x')};
  int i = 0;
  for (const std::string& value : cases) {
    const std::string key = "/v/" + std::to_string(i++) + " %_\xff";
    put_ok(key, value);
    auto got = get_ok(key);
    ASSERT_TRUE(got) << key;
    EXPECT_EQ(got->key, key);
    EXPECT_EQ(got->value, value) << key;
  }
}

TEST_F(StoreTest, RefusesBadArguments) {
  struct Case {
    std::string key;
    int64_t ttl;
    std::optional<int64_t> expect;
    std::string error;
  };
  const Case cases[] = {
      {"", 0, std::nullopt, "the key must not be empty"},
      {"/a", -1, std::nullopt, "ttl -1 is out of range (0 to 2147483647 seconds)"},
      {"/a", int64_t{1} << 40, std::nullopt,
       "ttl 1099511627776 is out of range (0 to 2147483647 seconds)"},
      {"/a", 0, -2, "expected revision -2 must not be negative"},
  };
  for (const Case& c : cases) {
    auto r = store_->put(c.key, "v", c.ttl, c.expect);
    ASSERT_FALSE(r.is_ok()) << c.error;
    EXPECT_EQ(r.status().message(), c.error);
  }
  auto r = store_->remove("", std::nullopt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "the key must not be empty");
  EXPECT_EQ(store_->revision(), 0);
  EXPECT_THAT(store_->take_changes(), IsEmpty());
}

struct ExpectCase {
  std::string key;
  int64_t expect;
  std::string error;  // empty: the write succeeds
};

// Each case starts from "/a" written at revision 1 and "/b" absent.
const ExpectCase kExpectCases[] = {
    {"/a", 0, "conflict: /a already exists (mod_revision 1)"},
    {"/a", 5, "conflict: /a has mod_revision 1, expected 5"},
    {"/b", 1, "conflict: /b does not exist (expected mod_revision 1)"},
    {"/a", 1, ""},
    {"/b", 0, ""},
};

TEST(StoreExpect, PutHonoursExpect) {
  for (const ExpectCase& c : kExpectCases) {
    TempDir dir;
    auto store = must_open(dir.path());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->put("/a", "old", 0, std::nullopt).is_ok());
    store->take_changes();
    auto r = store->put(c.key, "new", 0, c.expect);
    if (!c.error.empty()) {
      ASSERT_FALSE(r.is_ok()) << c.error;
      EXPECT_EQ(r.status().message(), c.error);
      EXPECT_EQ(store->revision(), 1);
      EXPECT_THAT(store->take_changes(), IsEmpty());
      EXPECT_EQ((*store->get("/a"))->value, "old");
      EXPECT_EQ(*store->get("/b"), std::nullopt);
      continue;
    }
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->mod_revision, 2);
    EXPECT_EQ((*store->get(c.key))->value, "new");
    EXPECT_EQ(store->take_changes().size(), 1u);
  }
}

TEST(StoreExpect, RemoveHonoursExpect) {
  for (const ExpectCase& c : kExpectCases) {
    TempDir dir;
    auto store = must_open(dir.path());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->put("/a", "old", 0, std::nullopt).is_ok());
    store->take_changes();
    auto r = store->remove(c.key, c.expect);
    if (!c.error.empty()) {
      ASSERT_FALSE(r.is_ok()) << c.error;
      EXPECT_EQ(r.status().message(), c.error);
      EXPECT_EQ((*store->get("/a"))->value, "old");
    } else {
      ASSERT_TRUE(r.is_ok()) << r.status().message();
      EXPECT_EQ(r->has_value(), c.key == "/a");  // "/b" was absent: nothing to remove
      EXPECT_EQ(*store->get(c.key), std::nullopt);
    }
    EXPECT_EQ(store->revision(), c.key == "/a" && c.error.empty() ? 2 : 1);
  }
}

TEST_F(StoreTest, RemoveReturnsTheEntryAndQueuesADelete) {
  put_ok("/a", "one");
  put_ok("/a", "two");
  store_->take_changes();
  auto removed = store_->remove("/a", std::nullopt);
  ASSERT_TRUE(removed.is_ok()) << removed.status().message();
  ASSERT_TRUE(*removed);
  EXPECT_EQ((*removed)->value, "two");
  EXPECT_EQ((*removed)->create_revision, 1);
  EXPECT_EQ((*removed)->mod_revision, 2);
  EXPECT_EQ(get_ok("/a"), std::nullopt);
  EXPECT_EQ(store_->revision(), 3);
  auto changes = store_->take_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].deleted);
  EXPECT_EQ(changes[0].entry.key, "/a");
  EXPECT_EQ(changes[0].entry.value, "");
  EXPECT_EQ(changes[0].entry.create_revision, 1);
  EXPECT_EQ(changes[0].entry.mod_revision, 3);

  auto absent = store_->remove("/a", std::nullopt);
  ASSERT_TRUE(absent.is_ok());
  EXPECT_EQ(*absent, std::nullopt);
  EXPECT_EQ(store_->revision(), 3);
  EXPECT_THAT(store_->take_changes(), IsEmpty());
  // A key written again after its delete starts a new life.
  Entry reborn = put_ok("/a", "three");
  EXPECT_EQ(reborn.create_revision, 4);
}

TEST_F(StoreTest, TakeChangesReturnsRevisionOrderOnce) {
  put_ok("/a", "1");
  put_ok("/t", "ttl", 5);
  put_ok("/b", "2");
  ASSERT_TRUE(store_->remove("/a", std::nullopt).is_ok());
  ASSERT_TRUE(store_->expire(clock_.now + 5).is_ok());
  auto changes = store_->take_changes();
  std::vector<int64_t> revisions;
  std::vector<std::string> keys;
  for (const Change& c : changes) {
    revisions.push_back(c.entry.mod_revision);
    keys.push_back((c.deleted ? "-" : "+") + c.entry.key);
  }
  EXPECT_THAT(revisions, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(keys, ElementsAre("+/a", "+/t", "+/b", "-/a", "-/t"));
  EXPECT_THAT(store_->take_changes(), IsEmpty());
}

TEST_F(StoreTest, ListUsesPrefixBoundariesBytewise) {
  for (const char* key : {"/apisix/route", "/apisix/routes", "/apisix/routes/", "/apisix/routes/2",
                          "/apisix/routes/10", "/apisix/routes/1", "/apisix/routes_x",
                          "/apisix/routes0", "/apisix/routes.", "/apisix/services/1"}) {
    put_ok(key, "{}");
  }
  struct Case {
    std::string prefix;
    std::vector<std::string> keys;
  };
  const Case cases[] = {
      {"/apisix/routes/",
       {"/apisix/routes/", "/apisix/routes/1", "/apisix/routes/10", "/apisix/routes/2"}},
      {"/apisix/routes/1", {"/apisix/routes/1", "/apisix/routes/10"}},
      {"/apisix/route",
       {"/apisix/route", "/apisix/routes", "/apisix/routes.", "/apisix/routes/", "/apisix/routes/1",
        "/apisix/routes/10", "/apisix/routes/2", "/apisix/routes0", "/apisix/routes_x"}},
      {"/apisix/services/", {"/apisix/services/1"}},
      {"/apisix/upstreams/", {}},
      {"/apisix/routes/3", {}},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(keys(c.prefix), ElementsAreArray(c.keys)) << c.prefix;
  }
  EXPECT_EQ(keys("").size(), 10u);
}

TEST_F(StoreTest, ListTreatsWildcardsAndHighBytesLiterally) {
  for (const char* key : {"/a%b/1", "/a_b/1", "/axb/1", "/aXb/1", "/a\\b/1", "/z\xff", "/z\xff\xff",
                          "/z\xff"
                          "a",
                          "/z\xfe", "/za", "/\xc3\xa9"}) {
    put_ok(key, "{}");
  }
  struct Case {
    std::string prefix;
    std::vector<std::string> keys;
  };
  const Case cases[] = {
      {"/a%b/", {"/a%b/1"}},
      {"/a_b/", {"/a_b/1"}},
      {"/a\\b/", {"/a\\b/1"}},
      {"%", {}},
      {"/z\xff",
       {"/z\xff",
        "/z\xff"
        "a",
        "/z\xff\xff"}},
      {"/z\xff\xff", {"/z\xff\xff"}},
      {"/z",
       {"/za", "/z\xfe", "/z\xff",
        "/z\xff"
        "a",
        "/z\xff\xff"}},
      {"/\xc3", {"/\xc3\xa9"}},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(keys(c.prefix), ElementsAreArray(c.keys)) << c.prefix;
  }
}

TEST_F(StoreTest, TtlHidesThenExpireDeletes) {
  const int64_t t0 = clock_.now;
  Entry t = put_ok("/t", "soon", 10);
  put_ok("/later", "later", 20);
  put_ok("/forever", "forever");
  EXPECT_EQ(t.expire_at, t0 + 10);
  EXPECT_EQ(store_->next_expiry(), t0 + 10);
  store_->take_changes();

  clock_.now = t0 + 9;
  EXPECT_TRUE(get_ok("/t"));
  clock_.now = t0 + 10;
  EXPECT_EQ(get_ok("/t"), std::nullopt);
  EXPECT_THAT(keys("/"), ElementsAre("/forever", "/later"));

  EXPECT_EQ(*store_->expire(t0 + 9), 0);
  EXPECT_EQ(store_->revision(), 3);
  auto n = store_->expire(t0 + 10);
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(store_->revision(), 4);
  auto changes = store_->take_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].deleted);
  EXPECT_EQ(changes[0].entry.key, "/t");
  EXPECT_EQ(changes[0].entry.create_revision, 1);
  EXPECT_EQ(changes[0].entry.mod_revision, 4);
  EXPECT_EQ(store_->next_expiry(), t0 + 20);

  EXPECT_EQ(*store_->expire(t0 + 100), 1);
  EXPECT_EQ(store_->next_expiry(), 0);
  EXPECT_EQ(store_->revision(), 5);
  EXPECT_THAT(keys("/"), ElementsAre("/forever"));
}

TEST_F(StoreTest, PutWithoutTtlClearsTheTtl) {
  put_ok("/t", "v", 10);
  EXPECT_NE(store_->next_expiry(), 0);
  EXPECT_EQ(put_ok("/t", "v", 0).expire_at, 0);
  EXPECT_EQ(store_->next_expiry(), 0);
  clock_.now += 100;
  EXPECT_TRUE(get_ok("/t"));
}

TEST_F(StoreTest, ExpiredButUnsweptKeyCountsAsAbsent) {
  put_ok("/t", "v", 10);
  put_ok("/u", "v", 10);
  clock_.now += 10;
  auto removed = store_->remove("/u", std::nullopt);
  ASSERT_TRUE(removed.is_ok());
  EXPECT_EQ(*removed, std::nullopt);
  auto fresh = store_->put("/t", "again", 0, 0);  // expect absent: succeeds
  ASSERT_TRUE(fresh.is_ok()) << fresh.status().message();
  EXPECT_EQ(fresh->create_revision, 3);
  EXPECT_EQ(store_->next_expiry(), clock_.now);  // "/u" is still due for its sweep
  store_->take_changes();
  EXPECT_EQ(*store_->expire(clock_.now), 1);  // only "/u": "/t" lives again
  auto changes = store_->take_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].entry.key, "/u");
  EXPECT_EQ(get_ok("/t")->value, "again");
}

// A trigger planted in the file makes a step of a write fail after other steps succeeded:
// the transaction must roll all of it back and queue nothing.
TEST(StoreRollback, FailedWriteChangesNothing) {
  TempDir dir;
  FakeClock clock;
  must_open(dir.path(), &clock).reset();
  ASSERT_EQ(raw_sql(dir.db(),
                    "CREATE TRIGGER fail_rev BEFORE UPDATE ON meta WHEN NEW.value = 3 "
                    "BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
                    "CREATE TRIGGER fail_del BEFORE DELETE ON kv WHEN OLD.key = '/t2' "
                    "BEGIN SELECT RAISE(ABORT, 'injected delete failure'); END;"),
            "");
  auto store = must_open(dir.path(), &clock);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->put("/t1", "v", 5, std::nullopt).is_ok());
  ASSERT_TRUE(store->put("/t2", "v", 5, std::nullopt).is_ok());
  store->take_changes();

  auto r = store->put("/c", "v", 0, std::nullopt);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "store " + dir.db() + ": cannot record revision 3: injected failure");
  EXPECT_EQ(*store->get("/c"), std::nullopt);  // the row written before the failure is gone
  EXPECT_EQ(store->revision(), 2);
  EXPECT_THAT(store->take_changes(), IsEmpty());

  auto n = store->expire(clock.now + 5);
  ASSERT_FALSE(n.is_ok());
  EXPECT_EQ(n.status().message(),
            "store " + dir.db() + ": cannot delete /t2: injected delete failure");
  EXPECT_EQ(store->revision(), 2);
  EXPECT_THAT(store->take_changes(), IsEmpty());
  EXPECT_EQ(store->next_expiry(), clock.now + 5);
  EXPECT_TRUE(*store->get("/t1"));  // "/t1" was deleted first, then rolled back
}

}  // namespace
}  // namespace sluice::store
