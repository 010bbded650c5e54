// Consumers as the request path sees them: SipHash-2-4 against the paper's vector, the
// constant-time comparison, the SecretIndex, attach_consumer's headers, anonymous consumers,
// and Chain::with_consumer (APISIX's merge_consumer_route).

#include "plugin/consumer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "plugin/chain.h"

namespace sluice::plugin {
namespace {

TEST(SipHash, MatchesTheReferenceVectors) {
  // Aumasson and Bernstein, SipHash, appendix A: key 00..0f, message 00..0e.
  const uint64_t k0 = 0x0706050403020100u, k1 = 0x0f0e0d0c0b0a0908u;
  std::string msg;
  for (int i = 0; i < 15; ++i) {
    msg.push_back(static_cast<char>(i));
  }
  EXPECT_EQ(siphash24(k0, k1, msg), 0xa129ca6149be45e5u);
  EXPECT_EQ(siphash24(k0, k1, ""), 0x726fdb47dd0e0e31u);
  EXPECT_EQ(siphash24(k0, k1, msg.substr(0, 8)), 0x93f5f5799a932462u);
}

TEST(SecretEqual, ComparesWholeStrings) {
  EXPECT_TRUE(secret_equal("", ""));
  EXPECT_TRUE(secret_equal("abc", "abc"));
  EXPECT_FALSE(secret_equal("abc", "abd"));
  EXPECT_FALSE(secret_equal("abc", "ab"));
  EXPECT_FALSE(secret_equal("ab", "abc"));
  EXPECT_FALSE(secret_equal(std::string("a\0b", 3), std::string("a\0c", 3)));
}

struct Fixture {
  Consumers consumers;
  const Consumer* add(std::string name, std::string custom_id = "") {
    auto c = std::make_unique<Consumer>();
    c->name = std::move(name);
    c->custom_id = std::move(custom_id);
    return &consumers.add(std::move(c));
  }
};

TEST(SecretIndex, FindsExactKeysOnly) {
  Fixture f;
  const Consumer* jack = f.add("jack");
  const Consumer* rose = f.add("rose");
  SecretIndex idx;
  idx.add("jack-key", &jack->self);
  idx.add("rose-key", &rose->self);
  idx.add("", &rose->self);  // APISIX's key schema allows the empty key
  EXPECT_EQ(idx.find("jack-key"), &jack->self);
  EXPECT_EQ(idx.find("rose-key"), &rose->self);
  EXPECT_EQ(idx.find(""), &rose->self);
  EXPECT_EQ(idx.find("jack-ke"), nullptr);
  EXPECT_EQ(idx.find("jack-key "), nullptr);
  EXPECT_EQ(idx.find(std::string(10000, 'x')), nullptr);  // longer than the decoy
  // A second add of the same key moves it (APISIX: the later consumer wins).
  idx.add("jack-key", &rose->self);
  EXPECT_EQ(idx.find("jack-key"), &rose->self);
  EXPECT_EQ(idx.size(), 3u);
}

TEST(Consumers, FindsByNameAndIndexByPlugin) {
  Fixture f;
  const Consumer* jack = f.add("jack");
  const Credential& cred = f.consumers.add_credential(*jack, "cred-1");
  EXPECT_EQ(cred.consumer, jack);
  EXPECT_EQ(jack->self.consumer, jack);
  EXPECT_TRUE(jack->self.id.empty());
  EXPECT_EQ(f.consumers.find("jack"), jack);
  EXPECT_EQ(f.consumers.find("rose"), nullptr);
  auto index = std::make_shared<ConsumerIndex>();
  f.consumers.set_index("key-auth", index);
  EXPECT_EQ(f.consumers.index("key-auth"), index.get());
  EXPECT_EQ(f.consumers.index("basic-auth"), nullptr);
}

TEST(AttachConsumer, SetsTheRequestAndTheUpstreamHeaders) {
  Fixture f;
  const Consumer* jack = f.add("jack", "c-1");
  const Credential& cred = f.consumers.add_credential(*jack, "cred-1");
  Context ctx;
  attach_consumer(ctx, cred);
  EXPECT_EQ(ctx.consumer, "jack");
  EXPECT_EQ(ctx.credential, &cred);
  const std::string* v = nullptr;
  ASSERT_TRUE(ctx.upstream.headers.lookup("x-consumer-username", &v));
  EXPECT_EQ(*v, "jack");
  ASSERT_TRUE(ctx.upstream.headers.lookup("X-Credential-Identifier", &v));
  EXPECT_EQ(*v, "cred-1");
  ASSERT_TRUE(ctx.upstream.headers.lookup("X-Consumer-Custom-ID", &v));
  EXPECT_EQ(*v, "c-1");
  // The consumer's own key: no credential id, and a client's header of that name dropped.
  Context own;
  const Consumer* rose = f.add("rose");
  attach_consumer(own, rose->self);
  EXPECT_TRUE(own.upstream.headers.drops("X-Credential-Identifier"));
  EXPECT_TRUE(own.upstream.headers.drops("X-Consumer-Custom-ID"));
}

TEST(AttachConsumer, AnonymousConsumerMissingAnswers401) {
  Fixture f;
  const Consumer* anon = f.add("anon");
  Context ctx;
  ctx.consumers = &f.consumers;
  EXPECT_TRUE(attach_anonymous(ctx, "key-auth", "anon"));
  EXPECT_EQ(ctx.credential, &anon->self);
  Context miss;
  miss.consumers = &f.consumers;
  EXPECT_FALSE(attach_anonymous(miss, "key-auth", "ghost"));
  EXPECT_EQ(miss.reply_status, 401);
  EXPECT_EQ(miss.reply_body, "{\"message\":\"Invalid user authorization\"}\n");
}

// A plugin that does nothing in the phases `phases`.
class Stub final : public Plugin {
 public:
  explicit Stub(uint32_t phases) : phases_(phases) {}
  uint32_t phases() const override { return phases_; }

 private:
  uint32_t phases_;
};

Entry entry(std::string name, int priority, uint32_t phases) {
  Entry e;
  e.name = std::move(name);
  e.priority = priority;
  e.plugin = std::make_shared<Stub>(phases);
  return e;
}

std::vector<std::string> names(const Chain& c, Phase p) {
  std::vector<std::string> out;
  for (uint8_t i : c.phase(p)) {
    out.push_back(c.entries()[i].name);
  }
  return out;
}

TEST(WithConsumer, KeepsRouteIndexesReplacesByNameAndRewritesOnlyTheAdded) {
  const uint32_t rw = phase_bit(Phase::kRewrite), acc = phase_bit(Phase::kAccess);
  Chain route({entry("key-auth", 2500, rw), entry("proxy-rewrite", 1008, rw),
               entry("limit-count", 1002, acc)});
  Entry consumer_lc = entry("limit-count", 1002, acc);
  const Plugin* consumer_lc_plugin = consumer_lc.plugin.get();
  Chain consumer({consumer_lc, entry("response-rewrite", 899, rw | acc), entry("cors", 4000, rw)});
  auto merged = Chain::with_consumer(&route, consumer);
  ASSERT_NE(merged, nullptr);
  ASSERT_EQ(merged->entries().size(), 5u);
  for (size_t i = 0; i < route.entries().size(); ++i) {
    EXPECT_EQ(merged->entries()[i].name, route.entries()[i].name) << i;
  }
  EXPECT_EQ(merged->entries()[2].plugin.get(), consumer_lc_plugin);  // the consumer's conf
  // The route's rewrite has run: only the plugins the consumer added rewrite, by priority.
  EXPECT_EQ(names(*merged, Phase::kRewrite),
            (std::vector<std::string>{"cors", "response-rewrite"}));
  EXPECT_EQ(names(*merged, Phase::kAccess),
            (std::vector<std::string>{"limit-count", "response-rewrite"}));
  // No route chain (a route without plugins, say): the consumer's alone.
  auto alone = Chain::with_consumer(nullptr, consumer);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->entries().size(), 3u);
}

TEST(WithConsumer, RefusesToPassTheEntryLimit) {
  std::vector<Entry> many;
  for (size_t i = 0; i < Chain::kMaxEntries; ++i) {
    many.push_back(entry("p" + std::to_string(i), 1, phase_bit(Phase::kAccess)));
  }
  Chain route(std::move(many));
  Chain consumer({entry("extra", 1, phase_bit(Phase::kAccess))});
  EXPECT_EQ(Chain::with_consumer(&route, consumer), nullptr);
  Chain same({entry("p3", 7, phase_bit(Phase::kAccess))});  // replaces: no new entry
  EXPECT_NE(Chain::with_consumer(&route, same), nullptr);
}

TEST(MergedChains, CachesPerVersionAndBuildsAloneForOlderOnes) {
  Fixture f;
  auto c = std::make_unique<Consumer>();
  c->name = "jack";
  c->chain = std::make_shared<Chain>(std::vector<Entry>{entry("x", 1, phase_bit(Phase::kLog))});
  const Consumer& jack = f.consumers.add(std::move(c));
  Chain route({entry("y", 2, phase_bit(Phase::kLog))});
  MergedChains cache;
  auto a = cache.get(5, &route, jack);
  EXPECT_EQ(cache.get(5, &route, jack), a);
  auto older = cache.get(4, &route, jack);
  EXPECT_NE(older, a);
  EXPECT_EQ(cache.get(5, &route, jack), a);  // the old request did not evict it
  EXPECT_NE(cache.get(6, &route, jack), a);  // a new version starts over
}

}  // namespace
}  // namespace sluice::plugin
