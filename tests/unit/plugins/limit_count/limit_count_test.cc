// limit-count's access hook with the local policy: verdicts, headers and reply bodies, how the
// key is read from the request, and which instances share a counter.

#include "plugins/limit_count/limit_count.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/event_loop.h"
#include "unit/router/fake_request.h"

namespace sluice::plugin {
// Readable verdicts in failure messages.
inline void PrintTo(Action a, std::ostream* os) {
  *os << (a == Action::kContinue ? "kContinue" : a == Action::kReply ? "kReply" : "kPending");
}
}  // namespace sluice::plugin

namespace sluice::plugins::limit_count {
namespace {

// The response header fields a hook added, as "Name: value\r\n" lines.
std::string lines(const plugin::HeaderEdits& e) {
  std::string out;
  e.for_each_added([&out](std::string_view n, std::string_view v) {
    out.append(n).append(": ").append(v).append("\r\n");
  });
  return out;
}

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

// One worker with its loop (the clock), and a plugin::Shared of its own so that no two tests
// share counters.
class LimitCountTest : public ::testing::Test {
 protected:
  LimitCountTest() {
    worker_.loop = &loop_;
    shared_.attr["limit-count"] = Json{{"local_keys", 1024}};
    loop_.update_time();
  }

  PluginPtr make(const char* conf, std::string_view owner = "route/1") {
    return make_in(shared_, conf, owner);
  }
  static PluginPtr make_in(plugin::Shared& shared, const char* conf, std::string_view owner) {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{owner, shared});
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? *p : nullptr;
  }
  // The error a conf that must be refused gets ("" when it was taken).
  std::string refusal(const char* conf) {
    auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared_});
    return p.is_ok() ? std::string() : p.status().message();
  }

  struct Outcome {
    Action action;
    int status;
    std::string body, headers;
  };

  // One request from `remote` with `headers` through the plugin's access hook.
  Outcome hit(const PluginPtr& p, std::string_view remote = "127.0.0.1", Headers headers = {}) {
    router::testing::FakeRequest req("GET", "/hello", "example.com", headers, remote);
    plugin::Context ctx;
    ctx.req = &req.head;
    ctx.match = req.ctx;
    ctx.worker = &worker_;
    ctx.route_id = "1";
    Outcome o;
    o.action = p->access(ctx);
    o.status = ctx.reply_status;
    o.body = ctx.reply_body;
    o.headers = lines(ctx.resp.headers);
    EXPECT_EQ(ctx.pending, nullptr);
    return o;
  }
  // Just the verdicts of one request each from `remotes`.
  std::vector<Action> verdicts(const PluginPtr& p,
                               std::initializer_list<std::string_view> remotes) {
    std::vector<Action> out;
    for (std::string_view r : remotes) {
      out.push_back(hit(p, r).action);
    }
    return out;
  }

  io::EventLoop loop_;
  plugin::WorkerLocal worker_;
  plugin::Shared shared_;
};

constexpr Action kOk = Action::kContinue;
constexpr Action kNo = Action::kReply;

std::string quota(uint64_t limit, uint64_t remaining, uint64_t reset) {
  return "X-RateLimit-Limit: " + std::to_string(limit) +
         "\r\nX-RateLimit-Remaining: " + std::to_string(remaining) +
         "\r\nX-RateLimit-Reset: " + std::to_string(reset) + "\r\n";
}

TEST_F(LimitCountTest, InfoAndPhases) {
  EXPECT_EQ(info().name, "limit-count");
  EXPECT_EQ(info().priority, 1002);
  EXPECT_FALSE(info().stream);
  PluginPtr p = make(R"({"count": 2, "time_window": 60})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->phases(), plugin::phase_bit(plugin::Phase::kAccess));
  auto bad = info().make(Json::parse(R"({"count": 2})"), plugin::BuildEnv{"route/1", shared_});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "property \"time_window\" is required");
}

// APISIX keeps the redis fields in if/then/else clauses of its schema: its jsonschema names
// the clause that failed; Sluice says that first and then what is wrong.
TEST_F(LimitCountTest, RedisFieldErrorsNameAPISIXsClause) {
  struct Case {
    const char* conf;
    const char* error;
  } cases[] = {
      {R"({"count": 1, "time_window": 1, "policy": "redis"})",
       R"(then clause did not match (property "redis_host" is required))"},
      {R"({"count": 1, "time_window": 1, "policy": "redis", "redis_host": "h", "redis_port": "6379"})",
       R"(then clause did not match (property "redis_host" validation failed: string too short, expected at least 2, got 1))"},
      {R"({"count": 1, "time_window": 1, "policy": "redis", "redis_host": "hh", "redis_port": "6379"})",
       R"(then clause did not match (property "redis_port" validation failed: wrong type: expected integer, got string))"},
      {R"({"count": 1, "time_window": 1, "policy": "redis-cluster", "redis_cluster_name": "c"})",
       R"(else clause did not match (property "redis_cluster_nodes" is required))"},
      {R"({"count": 1, "time_window": 1, "policy": "redis", "redis_host": "hh", "redis_ssl": true})",
       "redis_ssl: TLS to Redis is not supported by Sluice yet"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(refusal(c.conf), c.error) << c.conf;
  }
}

// APISIX reads the body for post_arg_* and graphql_*; Sluice would count every request under
// a nil key, so such keys are refused instead.
TEST_F(LimitCountTest, KeysReadFromTheBodyAreRefused) {
  struct Case {
    const char* conf;
    const char* error;
  } cases[] = {
      {R"({"count": 1, "time_window": 1, "key": "post_arg_user"})",
       "key variable post_arg_user is not supported yet: matching on the request body is not "
       "implemented"},
      {R"({"count": 1, "time_window": 1, "key_type": "var_combination",
           "key": "$remote_addr ${graphql_name}"})",
       "key variable graphql_name is not supported yet: matching on the request body (GraphQL) "
       "is not implemented"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(refusal(c.conf), c.error) << c.conf;
  }
  // Not a body variable: an unknown name, nil as in APISIX's ctx.var.
  EXPECT_EQ(refusal(R"({"count": 1, "time_window": 1, "key": "post_arg"})"), "");
}

TEST_F(LimitCountTest, CountTwoAdmitsTwoThenRejectsWithHeaders) {
  PluginPtr p = make(R"({"count": 2, "time_window": 60})");
  ASSERT_NE(p, nullptr);
  const std::vector<std::pair<Action, std::string>> want = {
      {kOk, quota(2, 1, 60)},
      {kOk, quota(2, 0, 60)},
      {kNo, quota(2, 0, 60)},
      {kNo, quota(2, 0, 60)},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    Outcome o = hit(p);
    EXPECT_EQ(o.action, want[i].first);
    EXPECT_EQ(o.headers, want[i].second);
    // Without rejected_msg a rejection has no body of the plugin's own.
    EXPECT_EQ(o.status, o.action == kNo ? 503 : 0);
    EXPECT_EQ(o.body, "");
  }
}

TEST_F(LimitCountTest, RejectedCodeAndMessage) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "rejected_code": 429,
                         "rejected_msg": "Requests are too frequent, please try again later."})");
  ASSERT_NE(p, nullptr);
  Outcome first = hit(p);
  EXPECT_EQ(first.action, kOk);
  EXPECT_EQ(first.status, 0);
  EXPECT_EQ(first.body, "");
  Outcome second = hit(p);
  EXPECT_EQ(second.action, kNo);
  EXPECT_EQ(second.status, 429);
  EXPECT_EQ(second.body,
            "{\"error_msg\":\"Requests are too frequent, please try again later.\"}\n");
  EXPECT_EQ(second.headers, quota(1, 0, 60));
}

TEST_F(LimitCountTest, RejectedMessageIsJsonEscaped) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "rejected_msg": "say \"no\""})");
  ASSERT_NE(p, nullptr);
  hit(p);
  EXPECT_EQ(hit(p).body, "{\"error_msg\":\"say \\\"no\\\"\"}\n");
}

TEST_F(LimitCountTest, NoQuotaHeadersWhenTurnedOff) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "show_limit_quota_header": false})");
  ASSERT_NE(p, nullptr);
  Outcome ok = hit(p);
  EXPECT_EQ(ok.action, kOk);
  EXPECT_EQ(ok.headers, "");
  Outcome no = hit(p);
  EXPECT_EQ(no.action, kNo);
  EXPECT_EQ(no.headers, "");
  EXPECT_EQ(no.status, 503);
}

TEST_F(LimitCountTest, DefaultKeyIsTheClientAddress) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(verdicts(p, {"10.0.0.1", "10.0.0.2", "10.0.0.1", "::1", "10.0.0.2"}),
            (std::vector<Action>{kOk, kOk, kNo, kOk, kNo}));
}

TEST_F(LimitCountTest, VarKeyReadsTheHeader) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "key_type": "var",
                         "key": "http_x_user"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "alice"}}).action, kOk);
  // Another user from the same address has a counter of its own ...
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "bob"}}).action, kOk);
  // ... and the same user from another address shares alice's.
  EXPECT_EQ(hit(p, "10.0.0.2", {{"x-user", "alice"}}).action, kNo);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "bob"}}).action, kNo);
}

TEST_F(LimitCountTest, AnAbsentVarFallsBackToTheClientAddress) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "key": "http_x_user"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p, "10.0.0.1").action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.2").action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-Other", "x"}}).action, kNo);
  EXPECT_EQ(hit(p, "10.0.0.2").action, kNo);
  // A request that has the header is counted by it, not by its address.
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "alice"}}).action, kOk);
}

TEST_F(LimitCountTest, AnUnknownVarFallsBackToTheClientAddress) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "key": "no_such_var"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(verdicts(p, {"10.0.0.1", "10.0.0.2", "10.0.0.1"}),
            (std::vector<Action>{kOk, kOk, kNo}));
}

TEST_F(LimitCountTest, VarCombination) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "key_type": "var_combination",
                         "key": "$remote_addr $http_x_user"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "alice"}}).action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "bob"}}).action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.2", {{"X-User", "alice"}}).action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.1", {{"X-User", "alice"}}).action, kNo);
  // Without the header the key is "10.0.0.1 ": one counter of its own.
  EXPECT_EQ(hit(p, "10.0.0.1").action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.1").action, kNo);
  EXPECT_EQ(hit(p, "10.0.0.2", {{"X-User", "bob"}}).action, kOk);
}

TEST_F(LimitCountTest, VarCombinationWithNothingResolvedFallsBackToTheClientAddress) {
  PluginPtr p = make(R"({"count": 1, "time_window": 60, "key_type": "var_combination",
                         "key": "${http_x_a}-${http_x_b}"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(hit(p, "10.0.0.1").action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.2").action, kOk);
  EXPECT_EQ(hit(p, "10.0.0.1").action, kNo);
  EXPECT_EQ(hit(p, "10.0.0.3", {{"X-A", "1"}}).action, kOk);  // "1-"
  EXPECT_EQ(hit(p, "10.0.0.4", {{"X-A", "1"}}).action, kNo);
  EXPECT_EQ(hit(p, "10.0.0.4", {{"X-A", "1"}, {"X-B", "2"}}).action, kOk);  // "1-2"
}

TEST_F(LimitCountTest, ConstantKeyIsOneCounterForEveryone) {
  PluginPtr p = make(R"({"count": 2, "time_window": 60, "key_type": "constant",
                         "key": "everyone"})");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(verdicts(p, {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"}),
            (std::vector<Action>{kOk, kOk, kNo, kNo}));
}

TEST_F(LimitCountTest, TheSameConfOnTheSameOwnerSharesItsCounter) {
  // Two builds of one route's conf (two snapshots, say): one counter. Key order does not
  // change the conf.
  PluginPtr a = make(R"({"count": 2, "time_window": 60})");
  PluginPtr b = make(R"({"time_window": 60, "count": 2})");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(hit(a).action, kOk);
  EXPECT_EQ(hit(b).headers, quota(2, 0, 60));
  EXPECT_EQ(hit(a).action, kNo);
  EXPECT_EQ(hit(b).action, kNo);
  // An edited conf starts afresh.
  PluginPtr c = make(R"({"count": 3, "time_window": 60})");
  ASSERT_NE(c, nullptr);
  Outcome o = hit(c);
  EXPECT_EQ(o.action, kOk);
  EXPECT_EQ(o.headers, quota(3, 2, 60));
  EXPECT_EQ(verdicts(c, {"127.0.0.1", "127.0.0.1", "127.0.0.1"}),
            (std::vector<Action>{kOk, kOk, kNo}));
}

TEST_F(LimitCountTest, DifferentOwnersDoNotShare) {
  PluginPtr r1 = make(R"({"count": 1, "time_window": 60})", "route/1");
  PluginPtr r2 = make(R"({"count": 1, "time_window": 60})", "route/2");
  PluginPtr g1 = make(R"({"count": 1, "time_window": 60})", "global_rule/1");
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r2, nullptr);
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ(hit(r1).action, kOk);
  EXPECT_EQ(hit(r2).action, kOk);
  EXPECT_EQ(hit(g1).action, kOk);
  EXPECT_EQ(hit(r1).action, kNo);
  EXPECT_EQ(hit(r2).action, kNo);
  EXPECT_EQ(hit(g1).action, kNo);
}

TEST_F(LimitCountTest, AGroupSharesAcrossOwners) {
  const char* conf = R"({"count": 2, "time_window": 60, "group": "services"})";
  PluginPtr r1 = make(conf, "route/1");
  PluginPtr r2 = make(conf, "route/2");
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r2, nullptr);
  EXPECT_EQ(hit(r1).action, kOk);
  EXPECT_EQ(hit(r2).headers, quota(2, 0, 60));
  EXPECT_EQ(hit(r1).action, kNo);
  EXPECT_EQ(hit(r2).action, kNo);
  // Another group is another counter.
  PluginPtr other = make(R"({"count": 2, "time_window": 60, "group": "other"})", "route/1");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(hit(other).action, kOk);
}

TEST_F(LimitCountTest, CountersLiveInTheSharedTheyWereBuiltWith) {
  PluginPtr here = make(R"({"count": 1, "time_window": 60})");
  ASSERT_NE(here, nullptr);
  EXPECT_EQ(hit(here).action, kOk);
  EXPECT_EQ(hit(here).action, kNo);
  plugin::Shared elsewhere;
  PluginPtr there = make_in(elsewhere, R"({"count": 1, "time_window": 60})", "route/1");
  ASSERT_NE(there, nullptr);
  EXPECT_EQ(hit(there).action, kOk);
  // plugin_attr.limit-count.local_keys sizes the node-wide table, made once per Shared.
  auto table = shared_.get<CounterTable>("limit-count/local", [] {
    ADD_FAILURE() << "the table should exist already";
    return std::make_shared<CounterTable>(1);
  });
  EXPECT_EQ(table->capacity(), 1024u);
  EXPECT_EQ(table->used(), 1u);
}

TEST_F(LimitCountTest, RedisFailureAnswers) {
  PluginPtr strict = make(R"({"count": 1, "time_window": 60, "policy": "redis",
                              "redis_host": "127.0.0.1"})");
  PluginPtr lenient = make(R"({"count": 1, "time_window": 60, "policy": "redis",
                               "redis_host": "127.0.0.1", "allow_degradation": true})");
  ASSERT_NE(strict, nullptr);
  ASSERT_NE(lenient, nullptr);
  auto* s = dynamic_cast<const LimitCount*>(strict.get());
  auto* l = dynamic_cast<const LimitCount*>(lenient.get());
  ASSERT_NE(s, nullptr);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(s->redis_target().ip, "127.0.0.1");
  EXPECT_TRUE(s->redis_target().error.empty());
  plugin::Context ctx;
  EXPECT_EQ(s->failed(ctx), kNo);
  EXPECT_EQ(ctx.reply_status, 500);
  EXPECT_EQ(ctx.reply_body, "{\"error_msg\":\"failed to limit count\"}\n");
  plugin::Context ctx2;
  EXPECT_EQ(l->failed(ctx2), kOk);
  EXPECT_EQ(ctx2.reply_status, 0);
  // The redis verdict shares the local one's headers and reply.
  plugin::Context ctx3;
  EXPECT_EQ(s->verdict(ctx3, false, 0, 12), kNo);
  EXPECT_EQ(lines(ctx3.resp.headers), quota(1, 0, 12));
  EXPECT_EQ(ctx3.reply_status, 503);
}

}  // namespace
}  // namespace sluice::plugins::limit_count

namespace sluice::plugins::limit_count {
namespace {

TEST(LimitCountGroupTest, ADifferentConfOfAKnownGroupIsMismatched) {
  auto check = [](const char* conf) {
    common::Status s = info().check(plugin::Json::parse(conf), plugin::PluginUse::kHttp);
    return s.is_ok() ? std::string() : s.message();
  };
  EXPECT_EQ(check(R"({"count": 2, "time_window": 60, "group": "unit-g"})"), "");
  EXPECT_EQ(check(R"({"count": 2, "time_window": 60, "group": "unit-g"})"), "");
  // Defaults filled in: the same conf.
  EXPECT_EQ(check(R"({"count": 2, "time_window": 60, "group": "unit-g", "rejected_code": 503})"),
            "");
  EXPECT_EQ(check(R"({"count": 3, "time_window": 60, "group": "unit-g"})"),
            "group conf mismatched");
  EXPECT_EQ(check(R"({"count": 2, "time_window": 60, "group": "unit-g", "key": "uri"})"),
            "group conf mismatched");
  // Another group, or none, is not concerned.
  EXPECT_EQ(check(R"({"count": 3, "time_window": 60, "group": "unit-h"})"), "");
  EXPECT_EQ(check(R"({"count": 3, "time_window": 60})"), "");
}

}  // namespace
}  // namespace sluice::plugins::limit_count
