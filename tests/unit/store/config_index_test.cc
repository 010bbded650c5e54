#include "store/config_index.h"

#include <gtest/gtest.h>

namespace sluice::store {
namespace {

Change put(std::string key, std::string value, int64_t rev = 1) {
  return Change{false, Entry{std::move(key), std::move(value), rev, rev, 0}};
}
Change del(std::string key) { return Change{true, Entry{std::move(key), "", 1, 2, 0}}; }

TEST(ConfigIndexTest, SplitKey) {
  KeyParts p;
  ASSERT_TRUE(split_key("/apisix", "/apisix/routes/1", &p));
  EXPECT_EQ(p.kind, "routes");
  EXPECT_EQ(p.id, "1");
  ASSERT_TRUE(split_key("/apisix", "/apisix/secrets/vault/1", &p));
  EXPECT_EQ(p.id, "vault/1");
  for (const char* bad :
       {"/apisix/routes/", "/apisix/routes", "/apisixx/routes/1", "/apisix//1", "routes/1", ""}) {
    EXPECT_FALSE(split_key("/apisix", bad, &p)) << bad;
  }
}

TEST(ConfigIndexTest, KeepsServedKindsInCreationOrderAndUpdatesInPlace) {
  ConfigIndex idx;
  ASSERT_TRUE(idx.apply(put("/apisix/routes/b", R"({"id":"b","uri":"/b","plugins":{}})", 1)));
  ASSERT_TRUE(idx.apply(put("/apisix/routes/a", R"({"id":"a","uri":"/a","plugins":{}})", 2)));
  ASSERT_TRUE(idx.apply(put("/apisix/routes/b", R"({"id":"b","uri":"/b2","plugins":{}})", 1)));
  ASSERT_EQ(idx.set().routes.size(), 2u);
  EXPECT_EQ(idx.set().routes[0].id, "b");
  EXPECT_EQ(idx.set().routes[0].uris[0], "/b2");
  ASSERT_TRUE(idx.apply(del("/apisix/routes/b")));
  ASSERT_EQ(idx.set().routes.size(), 1u);
  EXPECT_EQ(idx.set().routes[0].id, "a");
  ASSERT_TRUE(idx.apply(put("/apisix/routes/c", R"({"id":"c","uri":"/c","plugins":{}})", 3)));
  ASSERT_TRUE(idx.apply(del("/apisix/routes/a")));
  ASSERT_TRUE(idx.apply(put("/apisix/routes/a", R"({"id":"a","uri":"/a","plugins":{}})", 4)));
  EXPECT_EQ(idx.set().routes[0].id, "c");
  EXPECT_EQ(idx.set().routes[1].id, "a");
}

TEST(ConfigIndexTest, BadValueIsRefusedAndTheLastGoodOneKept) {
  ConfigIndex idx;
  ASSERT_TRUE(idx.apply(put("/apisix/upstreams/1", R"({"id":"1","nodes":{"127.0.0.1:1":1}})")));
  for (const char* bad : {"not json", "[1]", R"({"id":"1","nodes":5})"}) {
    auto st = idx.apply(put("/apisix/upstreams/1", bad));
    ASSERT_FALSE(st.is_ok()) << bad;
    EXPECT_EQ(st.message().rfind("/apisix/upstreams/1: ", 0), 0u) << st.message();
  }
  ASSERT_EQ(idx.set().upstreams.size(), 1u);
  EXPECT_EQ(idx.set().upstreams[0].nodes.size(), 1u);
  EXPECT_FALSE(idx.apply(put("/elsewhere/routes/1", "{}")).is_ok());
}

// plugin_metadata reaches the snapshot (cors's allow_origins_by_metadata reads it), keyed by
// the plugin's name; a bad value keeps the last good one, a delete removes it.
TEST(ConfigIndexTest, PluginMetadataIsKeptByPluginName) {
  ConfigIndex idx;
  const char* key = "/apisix/plugin_metadata/cors";
  ASSERT_TRUE(idx.apply(put(key, R"({"id":"cors","allow_origins":{"k":"https://a.com"}})")));
  ASSERT_EQ(idx.set().plugin_metadata.size(), 1u);
  EXPECT_EQ(idx.set().plugin_metadata[0].id, "cors");
  EXPECT_EQ(idx.set().plugin_metadata[0].value,
            config::Json::parse(R"({"allow_origins":{"k":"https://a.com"}})"));
  EXPECT_FALSE(idx.apply(put(key, R"({"allow_origins":{"k":"a.com"}})")).is_ok());
  EXPECT_FALSE(idx.apply(put("/apisix/plugin_metadata/no-such-plugin", "{}")).is_ok());
  ASSERT_EQ(idx.set().plugin_metadata.size(), 1u);
  EXPECT_EQ(idx.set().plugin_metadata[0].value["allow_origins"]["k"], "https://a.com");
  ASSERT_TRUE(idx.apply(del(key)));
  EXPECT_TRUE(idx.set().plugin_metadata.empty());
}

// A route an older Sluice stored whose vars are now refused (they read the body) is skipped
// on load, with the reason, instead of failing the whole configuration's build.
TEST(ConfigIndexTest, StoredRouteThatNoLongerCompilesIsSkipped) {
  ConfigIndex idx;
  auto st =
      idx.apply(put("/apisix/routes/1",
                    R"({"id":"1","uri":"/a","plugins":{},"vars":[["post_arg_a","==","1"]]})"));
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind("/apisix/routes/1: failed to validate the 'vars' expression: "
                               "variable post_arg_a is not supported yet",
                               0),
            0u)
      << st.message();
  EXPECT_TRUE(idx.set().routes.empty());
  ASSERT_TRUE(idx.apply(put("/apisix/routes/2", R"({"id":"2","uri":"/b","plugins":{}})")));
  EXPECT_EQ(idx.set().routes.size(), 1u);
}

TEST(ConfigIndexTest, TracksReferrers) {
  ConfigIndex idx;
  ASSERT_TRUE(idx.apply(put("/apisix/routes/2", R"({"id":"2","uri":"/a","upstream_id":7})")));
  ASSERT_TRUE(idx.apply(put("/apisix/routes/1", R"({"id":"1","uri":"/a","upstream_id":"7"})")));
  ASSERT_TRUE(idx.apply(put("/apisix/consumers/jack", R"({"username":"jack","group_id":"g"})")));
  EXPECT_EQ(idx.first_referrer("/apisix/upstreams/7"), "/apisix/routes/1");
  EXPECT_EQ(idx.first_referrer("/apisix/consumer_groups/g"), "/apisix/consumers/jack");
  ASSERT_TRUE(idx.apply(put("/apisix/routes/1", R"({"id":"1","uri":"/a","plugins":{}})")));
  EXPECT_EQ(idx.first_referrer("/apisix/upstreams/7"), "/apisix/routes/2");
  ASSERT_TRUE(idx.apply(del("/apisix/routes/2")));
  EXPECT_EQ(idx.first_referrer("/apisix/upstreams/7"), "");
}

}  // namespace
}  // namespace sluice::store

namespace sluice::store {
namespace {

// APISIX 3.7+ keeps a consumer's credentials under its key; each is decoded with the consumer
// and id its key names.
TEST(ConfigIndexTest, CredentialsLiveUnderTheirConsumer) {
  ConfigIndex idx;
  EXPECT_TRUE(is_credential_key("/apisix", "/apisix/consumers/jack/credentials/a"));
  EXPECT_FALSE(is_credential_key("/apisix", "/apisix/consumers/jack"));
  EXPECT_FALSE(is_credential_key("/apisix", "/apisix/routes/jack/credentials/a"));
  ASSERT_TRUE(idx.apply(put("/apisix/consumers/jack", R"({"username":"jack"})", 1)));
  ASSERT_TRUE(idx.apply(
      put("/apisix/consumers/jack/credentials/a", R"({"id":"other","desc":"d","plugins":{}})", 2)));
  ASSERT_EQ(idx.set().consumers.size(), 1u);
  EXPECT_EQ(idx.set().consumers[0].username, "jack");
  ASSERT_EQ(idx.set().credentials.size(), 1u);
  EXPECT_EQ(idx.set().credentials[0].consumer, "jack");
  EXPECT_EQ(idx.set().credentials[0].id, "a");  // the key's, as APISIX's consumer.lua reads it
  EXPECT_EQ(idx.set().credentials[0].desc, "d");
  // A value that is not a credential keeps the last good one.
  common::Status bad =
      idx.apply(put("/apisix/consumers/jack/credentials/a",
                    R"({"plugins":{"limit-count":{"count":1,"time_window":1}}})", 3));
  EXPECT_EQ(bad.message(),
            "/apisix/consumers/jack/credentials/a: only supports auth type plugins in consumer "
            "credential");
  EXPECT_EQ(idx.set().credentials[0].desc, "d");
  ASSERT_TRUE(idx.apply(del("/apisix/consumers/jack/credentials/a")));
  EXPECT_TRUE(idx.set().credentials.empty());
  ASSERT_EQ(idx.set().consumers.size(), 1u);
  ASSERT_TRUE(idx.apply(del("/apisix/consumers/jack")));
  EXPECT_TRUE(idx.set().consumers.empty());
}

}  // namespace
}  // namespace sluice::store
