// The plugin chain: sorting, per-phase lists, the request-phase runner (reply, pending and
// resume, `_meta.filter`, `_meta.error_response`) and the response phases, with fake plugins
// that record every hook they run.

#include "plugin/chain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "unit/router/fake_request.h"

namespace sluice::plugin {

// Readable actions in failure messages.
inline void PrintTo(Action a, std::ostream* os) {
  *os << (a == Action::kContinue ? "kContinue" : a == Action::kReply ? "kReply" : "kPending");
}

namespace {

using router::testing::FakeRequest;

constexpr uint32_t kRewrite = phase_bit(Phase::kRewrite);
constexpr uint32_t kAccess = phase_bit(Phase::kAccess);
constexpr uint32_t kBeforeProxy = phase_bit(Phase::kBeforeProxy);
constexpr uint32_t kHeaderFilter = phase_bit(Phase::kHeaderFilter);
constexpr uint32_t kLog = phase_bit(Phase::kLog);
constexpr uint32_t kAll = kRewrite | kAccess | kBeforeProxy | kHeaderFilter | kLog;

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kRewrite:
      return "rewrite";
    case Phase::kAccess:
      return "access";
    case Phase::kBeforeProxy:
      return "before_proxy";
    case Phase::kHeaderFilter:
      return "header_filter";
    case Phase::kBodyFilter:
      return "body_filter";
    case Phase::kLog:
      return "log";
  }
  return "?";
}

using Calls = std::vector<std::string>;

// A plugin that appends "<name>:<phase>" to `calls` for every hook it runs, and answers what
// the test scripted for that phase (kContinue unless told).
// Thread: any (test only; `calls` is the test's)
class Recorder final : public Plugin {
 public:
  Recorder(std::string name, uint32_t phases, Calls* calls)
      : name_(std::move(name)), phases_(phases), calls_(calls) {}

  // The phase's hook answers `a`; with kReply it sets the reply to `status` / `body` first.
  Recorder& answer(Phase p, Action a, int status = 0, std::string body = "") {
    answers_[static_cast<int>(p)] = a;
    status_ = status;
    body_ = std::move(body);
    return *this;
  }

  uint32_t phases() const override { return phases_; }
  Action rewrite(Context& ctx) const override { return hit(Phase::kRewrite, ctx); }
  Action access(Context& ctx) const override { return hit(Phase::kAccess, ctx); }
  Action before_proxy(Context& ctx) const override { return hit(Phase::kBeforeProxy, ctx); }
  void header_filter(Context& ctx) const override { hit(Phase::kHeaderFilter, ctx); }
  void log(Context& ctx) const override { hit(Phase::kLog, ctx); }
  void body_filter(Context& ctx, BodyPiece& piece) const override {
    hit(Phase::kBodyFilter, ctx);
    calls_->back() += "(" + std::string(piece.data()) + (piece.eof() ? ",eof)" : ")");
  }

 private:
  Action hit(Phase p, Context& ctx) const {
    calls_->push_back(name_ + ":" + phase_name(p));
    Action a = answers_[static_cast<int>(p)];
    if (a == Action::kReply) {
      ctx.reply_status = status_;
      ctx.reply_body = body_;
    }
    return a;
  }

  std::string name_;
  uint32_t phases_;
  Calls* calls_;
  Action answers_[kPhaseCount] = {};
  int status_ = 0;
  std::string body_;
};

// Builds entries and keeps a handle on each fake so a test can script it before the chain is
// made (a Chain holds its plugins as const).
class Fakes {
 public:
  Recorder& add(std::vector<Entry>* to, std::string name, int priority, uint32_t phases) {
    auto p = std::make_shared<Recorder>(name, phases, &calls);
    Entry e;
    e.name = std::move(name);
    e.priority = priority;
    e.plugin = p;
    to->push_back(std::move(e));
    return *p;
  }

  Calls calls;
};

router::Expr compile(const char* vars) {
  auto e = router::Expr::compile(nlohmann::json::parse(vars));
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e.is_ok() ? std::move(e).value() : router::Expr();
}

std::vector<std::string> names(const Chain& c) {
  std::vector<std::string> out;
  for (const Entry& e : c.entries()) {
    out.push_back(e.name);
  }
  return out;
}

std::vector<std::string> phase_names(const Chain& c, Phase p) {
  std::vector<std::string> out;
  for (uint8_t i : c.phase(p)) {
    out.push_back(c.entries()[i].name);
  }
  return out;
}

TEST(Chain, SortsByPriorityHighestFirstTiesByName) {
  Fakes f;
  std::vector<Entry> in;
  f.add(&in, "low", 1, kAccess);
  f.add(&in, "tie-c", 5, kAccess);
  f.add(&in, "high", 10, kAccess);
  f.add(&in, "tie-b", 5, kAccess);
  f.add(&in, "negative", -3, kAccess);
  Chain c(std::move(in));
  EXPECT_EQ(names(c), (std::vector<std::string>{"high", "tie-b", "tie-c", "low", "negative"}));
  EXPECT_EQ(phase_names(c, Phase::kAccess), names(c));
}

TEST(Chain, ListsEachPluginOnlyInThePhasesItImplements) {
  Fakes f;
  std::vector<Entry> in;
  f.add(&in, "auth", 2500, kRewrite);
  f.add(&in, "limit", 1002, kAccess);
  f.add(&in, "both", 1500, kRewrite | kAccess);
  f.add(&in, "metrics", 500, kLog);
  f.add(&in, "headers", 900, kHeaderFilter | kLog);
  Chain c(std::move(in));
  EXPECT_EQ(phase_names(c, Phase::kRewrite), (std::vector<std::string>{"auth", "both"}));
  EXPECT_EQ(phase_names(c, Phase::kAccess), (std::vector<std::string>{"both", "limit"}));
  EXPECT_TRUE(phase_names(c, Phase::kBeforeProxy).empty());
  EXPECT_EQ(phase_names(c, Phase::kHeaderFilter), std::vector<std::string>{"headers"});
  EXPECT_EQ(phase_names(c, Phase::kLog), (std::vector<std::string>{"headers", "metrics"}));
  EXPECT_TRUE(c.has(Phase::kRewrite));
  EXPECT_TRUE(c.has(Phase::kAccess));
  EXPECT_FALSE(c.has(Phase::kBeforeProxy));
  EXPECT_TRUE(c.has(Phase::kHeaderFilter));
  EXPECT_TRUE(c.has(Phase::kLog));
  EXPECT_TRUE(c.timed());
  EXPECT_FALSE(c.empty());
}

TEST(Chain, KeepsAtMostMaxEntries) {
  Fakes f;
  std::vector<Entry> in;
  for (size_t i = 0; i < Chain::kMaxEntries + 3; ++i) {
    f.add(&in, "p" + std::to_string(100 + i), static_cast<int>(i), kAccess);
  }
  Chain c(std::move(in));
  ASSERT_EQ(c.entries().size(), Chain::kMaxEntries);
  EXPECT_EQ(c.phase(Phase::kAccess).size(), Chain::kMaxEntries);
  // The lowest priorities are the ones dropped.
  EXPECT_EQ(c.entries().back().priority, 3);
}

TEST(Chain, AnEmptyChainCostsNothing) {
  Chain none;
  Chain from_empty{std::vector<Entry>{}};
  for (const Chain* c : {&none, &from_empty}) {
    EXPECT_TRUE(c->empty());
    EXPECT_FALSE(c->timed());
    for (int p = 0; p < kPhaseCount; ++p) {
      EXPECT_FALSE(c->has(static_cast<Phase>(p)));
      EXPECT_TRUE(c->phase(static_cast<Phase>(p)).empty());
    }
  }
  FakeRequest req("GET", "/x");
  Context ctx;
  ctx.match = req.ctx;
  for (const Chains& cs : {Chains{}, Chains{&none, &from_empty}}) {
    EXPECT_FALSE(cs.timed());
    for (int p = 0; p < kPhaseCount; ++p) {
      EXPECT_FALSE(cs.has(static_cast<Phase>(p)));
    }
    ctx.reset();
    prepare(cs, ctx);
    EXPECT_EQ(ctx.skip_global, 0u);
    EXPECT_EQ(ctx.skip_route, 0u);
    EXPECT_EQ(run_request(cs, ctx, Phase::kBeforeProxy), Action::kContinue);
    run_response(cs, ctx, Phase::kHeaderFilter);
    run_response(cs, ctx, Phase::kLog);
    EXPECT_EQ(ctx.reply_status, 0);
    EXPECT_EQ(ctx.pending, nullptr);
  }
}

TEST(Chains, TimedIffALogHookExists) {
  Fakes f;
  std::vector<Entry> a, l;
  f.add(&a, "access", 1, kAccess | kHeaderFilter);
  f.add(&l, "log", 1, kLog);
  Chain no_log(std::move(a)), with_log(std::move(l));
  EXPECT_FALSE((Chains{&no_log, nullptr}).timed());
  EXPECT_FALSE((Chains{nullptr, &no_log}).timed());
  EXPECT_FALSE((Chains{&no_log, &no_log}).timed());
  EXPECT_TRUE((Chains{&with_log, nullptr}).timed());
  EXPECT_TRUE((Chains{nullptr, &with_log}).timed());
  EXPECT_TRUE((Chains{&no_log, &with_log}).timed());
  EXPECT_FALSE((Chains{}).timed());
}

// A global chain and a route chain the runner tests share.
struct TwoChains {
  TwoChains() {
    std::vector<Entry> g, r;
    g1 = &f.add(&g, "g1", 10, kRewrite | kAccess | kLog);
    g2 = &f.add(&g, "g2", 1, kAccess);
    r1 = &f.add(&r, "r1", 100, kRewrite | kAccess | kBeforeProxy | kHeaderFilter);
    r2 = &f.add(&r, "r2", 50, kAccess | kBeforeProxy | kLog);
    global_entries = std::move(g);
    route_entries = std::move(r);
  }
  // Call after scripting the fakes.
  Chains chains() {
    global = std::make_unique<Chain>(std::move(global_entries));
    route = std::make_unique<Chain>(std::move(route_entries));
    return Chains{global.get(), route.get()};
  }

  Fakes f;
  Recorder *g1, *g2, *r1, *r2;
  std::vector<Entry> global_entries, route_entries;
  std::unique_ptr<Chain> global, route;
};

TEST(RunRequest, GlobalBeforeRouteInEachPhaseAndPhasesInOrder) {
  TwoChains t;
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kContinue);
  EXPECT_EQ(t.f.calls, (Calls{"g1:rewrite", "r1:rewrite", "g1:access", "g2:access", "r1:access",
                              "r2:access", "r1:before_proxy", "r2:before_proxy"}));
  EXPECT_EQ(ctx.reply_status, 0);
  EXPECT_EQ(ctx.pending, nullptr);
}

TEST(RunRequest, LastAccessSkipsBeforeProxy) {
  TwoChains t;
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kAccess), Action::kContinue);
  EXPECT_EQ(t.f.calls, (Calls{"g1:rewrite", "r1:rewrite", "g1:access", "g2:access", "r1:access",
                              "r2:access"}));
}

TEST(RunRequest, ReplyStopsTheChain) {
  TwoChains t;
  t.r1->answer(Phase::kAccess, Action::kReply, 429, "{\"error_msg\":\"slow down\"}\n");
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
  EXPECT_EQ(t.f.calls, (Calls{"g1:rewrite", "r1:rewrite", "g1:access", "g2:access", "r1:access"}));
  EXPECT_EQ(ctx.reply_status, 429);
  EXPECT_EQ(ctx.reply_body, "{\"error_msg\":\"slow down\"}\n");
  EXPECT_EQ(ctx.pending, nullptr);
}

TEST(RunRequest, AGlobalReplyStopsTheRouteToo) {
  TwoChains t;
  t.g1->answer(Phase::kRewrite, Action::kReply, 403);
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
  EXPECT_EQ(t.f.calls, Calls{"g1:rewrite"});
  EXPECT_EQ(ctx.reply_status, 403);
}

TEST(RunRequest, ErrorResponseReplacesTheReplyBody) {
  TwoChains t;
  t.r2->answer(Phase::kAccess, Action::kReply, 503, "{\"error_msg\":\"plugin's own\"}\n");
  t.route_entries[1].has_error_response = true;
  t.route_entries[1].error_response = "{\"message\":\"custom\"}\n";
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
  EXPECT_EQ(ctx.reply_status, 503);  // the status stays the plugin's
  EXPECT_EQ(ctx.reply_body, "{\"message\":\"custom\"}\n");
}

TEST(RunRequest, ErrorResponseLeavesAnAnswerBelow400Alone) {
  // APISIX's run_plugin applies it only when the code is 400 or more (redirect's 301).
  for (int status : {301, 399, 400}) {
    SCOPED_TRACE(status);
    TwoChains t;
    t.r2->answer(Phase::kAccess, Action::kReply, status, "page\n");
    t.route_entries[1].has_error_response = true;
    t.route_entries[1].error_response = "custom\n";
    Chains c = t.chains();
    Context ctx;
    EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
    EXPECT_EQ(ctx.reply_body, status >= 400 ? "custom\n" : "page\n");
  }
}

TEST(RunRequest, ErrorResponseOfAnotherPluginDoesNotApply) {
  TwoChains t;
  t.r2->answer(Phase::kAccess, Action::kReply, 503, "own\n");
  t.route_entries[0].has_error_response = true;  // r1's, which continues
  t.route_entries[0].error_response = "r1's\n";
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
  EXPECT_EQ(ctx.reply_body, "own\n");
}

TEST(RunRequest, PendingStopsAndResumesWithTheNextPlugin) {
  TwoChains t;
  t.r1->answer(Phase::kAccess, Action::kPending);
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kPending);
  EXPECT_EQ(ctx.pending, t.r1);
  EXPECT_EQ(ctx.phase, Phase::kAccess);
  EXPECT_EQ(t.f.calls, (Calls{"g1:rewrite", "r1:rewrite", "g1:access", "g2:access", "r1:access"}));
  t.f.calls.clear();
  resumed(c, ctx, Action::kContinue);
  EXPECT_EQ(ctx.pending, nullptr);
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kContinue);
  // r1 is not asked again in access; it runs its next phase as usual.
  EXPECT_EQ(t.f.calls, (Calls{"r2:access", "r1:before_proxy", "r2:before_proxy"}));
}

TEST(RunRequest, APendingGlobalPluginResumesIntoTheRouteChain) {
  TwoChains t;
  t.g2->answer(Phase::kAccess, Action::kPending);
  Chains c = t.chains();
  Context ctx;
  EXPECT_EQ(run_request(c, ctx, Phase::kAccess), Action::kPending);
  EXPECT_EQ(ctx.pending, t.g2);
  t.f.calls.clear();
  resumed(c, ctx, Action::kContinue);
  EXPECT_EQ(run_request(c, ctx, Phase::kAccess), Action::kContinue);
  EXPECT_EQ(t.f.calls, (Calls{"r1:access", "r2:access"}));
}

TEST(RunRequest, ResumedWithReplyAppliesErrorResponse) {
  for (bool has_error_response : {false, true}) {
    SCOPED_TRACE(has_error_response);
    TwoChains t;
    t.r1->answer(Phase::kAccess, Action::kPending);
    t.route_entries[0].has_error_response = has_error_response;
    t.route_entries[0].error_response = "replaced\n";
    Chains c = t.chains();
    Context ctx;
    ASSERT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kPending);
    // What the suspended hook does before Host::resume(token, kReply).
    ctx.reply_status = 500;
    ctx.reply_body = "{\"error_msg\":\"failed to limit count\"}\n";
    resumed(c, ctx, Action::kReply);
    EXPECT_EQ(ctx.pending, nullptr);
    EXPECT_EQ(ctx.reply_status, 500);
    EXPECT_EQ(ctx.reply_body,
              has_error_response ? "replaced\n" : "{\"error_msg\":\"failed to limit count\"}\n");
  }
}

// g1 and r1 run only for ?a=1; g2 and r2 always.
struct Filtered : TwoChains {
  Filtered() {
    global_entries[0].filter = compile(R"([["arg_a", "==", "1"]])");
    global_entries[0].has_filter = true;
    route_entries[0].filter = compile(R"([["arg_a", "==", "1"]])");
    route_entries[0].has_filter = true;
  }
};

TEST(Filter, AFilteredOutPluginIsSkippedInEveryPhase) {
  Filtered t;
  Chains c = t.chains();
  FakeRequest req("GET", "/x?a=2");
  Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  prepare(c, ctx);
  EXPECT_NE(ctx.skip_global, 0u);
  EXPECT_NE(ctx.skip_route, 0u);
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kContinue);
  run_response(c, ctx, Phase::kHeaderFilter);
  run_response(c, ctx, Phase::kLog);
  EXPECT_EQ(t.f.calls, (Calls{"g2:access", "r2:access", "r2:before_proxy", "r2:log"}));
}

TEST(Filter, AFilteredInPluginRunsInEveryPhase) {
  Filtered t;
  Chains c = t.chains();
  FakeRequest req("GET", "/x?a=1");
  Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  prepare(c, ctx);
  EXPECT_EQ(ctx.skip_global, 0u);
  EXPECT_EQ(ctx.skip_route, 0u);
  EXPECT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kContinue);
  run_response(c, ctx, Phase::kHeaderFilter);
  run_response(c, ctx, Phase::kLog);
  EXPECT_EQ(t.f.calls,
            (Calls{"g1:rewrite", "r1:rewrite", "g1:access", "g2:access", "r1:access", "r2:access",
                   "r1:before_proxy", "r2:before_proxy", "r1:header_filter", "g1:log", "r2:log"}));
}

TEST(Filter, AChainWithoutFiltersSkipsNothing) {
  TwoChains t;
  Chains c = t.chains();
  FakeRequest req("GET", "/x?a=2");
  Context ctx;
  ctx.match = req.ctx;
  ctx.skip_global = ctx.skip_route = ~uint64_t{0};  // stale bits from an earlier request
  prepare(c, ctx);
  EXPECT_EQ(ctx.skip_global, 0u);
  EXPECT_EQ(ctx.skip_route, 0u);
}

// A prefer_route plugin (prometheus) on a global rule and on the route runs once: the
// route's; where the route lacks it, or has no chain, the global rule's runs.
TEST(PreferRoute, TheRoutesInstanceReplacesTheGlobalOne) {
  Fakes f;
  std::vector<Entry> g, r, other;
  f.add(&g, "prom", 500, kLog);
  g.back().prefer_route = true;
  f.add(&g, "g2", 1, kLog);  // not prefer_route: runs whatever the route has
  f.add(&r, "prom", 500, kLog);
  f.add(&r, "g2", 1, kLog);
  f.add(&other, "r2", 1, kLog);
  Chain global(std::move(g)), route(std::move(r)), without(std::move(other));
  FakeRequest req("GET", "/x");
  for (const Chain* rc : std::initializer_list<const Chain*>{&route, &without, nullptr}) {
    f.calls.clear();
    Context ctx;
    ctx.match = req.ctx;
    Chains c{&global, rc};
    prepare(c, ctx);
    run_response(c, ctx, Phase::kLog);
    size_t proms = std::count(f.calls.begin(), f.calls.end(), "prom:log");
    EXPECT_EQ(proms, 1u) << (rc == &route ? "route has it" : "route lacks it");
    EXPECT_EQ(f.calls.front(), rc == &route ? "g2:log" : "prom:log");
  }
}

TEST(RunResponse, RunsEveryImplementingPluginGlobalFirst) {
  TwoChains t;
  t.r1->answer(Phase::kAccess, Action::kReply, 401);
  Chains c = t.chains();
  Context ctx;
  ASSERT_EQ(run_request(c, ctx, Phase::kBeforeProxy), Action::kReply);
  t.f.calls.clear();
  // After a reply the response phases still run for every plugin that implements them.
  run_response(c, ctx, Phase::kHeaderFilter);
  EXPECT_EQ(t.f.calls, Calls{"r1:header_filter"});
  t.f.calls.clear();
  run_response(c, ctx, Phase::kLog);
  EXPECT_EQ(t.f.calls, (Calls{"g1:log", "r2:log"}));
}

TEST(RunBodyFilter, EachPieceReachesEveryBodyFilterGlobalFirst) {
  Fakes f;
  std::vector<Entry> g, r;
  f.add(&g, "g", 10, phase_bit(Phase::kBodyFilter));
  f.add(&r, "r", 20, phase_bit(Phase::kBodyFilter) | kLog);
  f.add(&r, "quiet", 30, kLog);  // no body_filter: never called with a piece
  Chain global(std::move(g)), route(std::move(r));
  Chains c{&global, &route};
  Context ctx;
  run_body_filter(c, ctx, "hello ", false);
  run_body_filter(c, ctx, "world", false);
  run_body_filter(c, ctx, "", true);
  EXPECT_EQ(f.calls,
            (Calls{"g:body_filter(hello )", "r:body_filter(hello )", "g:body_filter(world)",
                   "r:body_filter(world)", "g:body_filter(,eof)", "r:body_filter(,eof)"}));
  f.calls.clear();
  Chain none{std::vector<Entry>{}};
  run_body_filter(Chains{&none, nullptr}, ctx, "x", true);
  EXPECT_TRUE(f.calls.empty());
}

// A body_filter that rewrites pieces: "upper" replaces each with its upper case, "drop" drops
// pieces that are not the last, "tail" replaces the last piece with "<end>". Its header_filter
// marks the request when the status is 200, and its body_filter only acts on marked requests.
class Rewriter final : public Plugin {
 public:
  explicit Rewriter(std::string mode) : mode_(std::move(mode)) {}
  uint32_t phases() const override {
    return phase_bit(Phase::kHeaderFilter) | phase_bit(Phase::kBodyFilter);
  }
  void header_filter(Context& ctx) const override {
    if (ctx.status == 200) {
      ctx.mark();
    }
  }
  void body_filter(Context& ctx, BodyPiece& piece) const override {
    if (!ctx.marked()) {
      return;
    }
    if (mode_ == "upper") {
      std::string up(piece.data());
      for (char& ch : up) {
        ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      }
      piece.replace(up);
    } else if (mode_ == "drop" && !piece.eof()) {
      piece.drop();
    } else if (mode_ == "tail" && piece.eof()) {
      piece.replace("<end>");
    }
  }

 private:
  std::string mode_;
};

Entry rewriter(const std::string& mode, int priority) {
  Entry e;
  e.name = mode;
  e.priority = priority;
  e.plugin = std::make_shared<Rewriter>(mode);
  return e;
}

TEST(RunBodyFilter, HooksReplaceAndDropPiecesInTurn) {
  std::vector<Entry> r;
  r.push_back(rewriter("upper", 30));
  r.push_back(rewriter("tail", 20));
  Chain route(std::move(r));
  Chains c{nullptr, &route};
  Context ctx;
  ctx.status = 200;
  run_response(c, ctx, Phase::kHeaderFilter);
  EXPECT_EQ(run_body_filter(c, ctx, "hello", false), "HELLO");
  EXPECT_EQ(run_body_filter(c, ctx, "", true), "<end>");  // upper ran first, then tail

  std::vector<Entry> d;
  d.push_back(rewriter("drop", 30));
  d.push_back(rewriter("upper", 20));  // sees the dropped piece as empty
  Chain dropping(std::move(d));
  Context ctx2;
  ctx2.status = 200;
  Chains c2{nullptr, &dropping};
  run_response(c2, ctx2, Phase::kHeaderFilter);
  EXPECT_EQ(run_body_filter(c2, ctx2, "abc", false), "");
  EXPECT_EQ(run_body_filter(c2, ctx2, "last", true), "LAST");
}

TEST(RunBodyFilter, UntouchedPiecesAreTheSameBytes) {
  std::vector<Entry> r;
  r.push_back(rewriter("upper", 30));
  Chain route(std::move(r));
  Context ctx;
  ctx.status = 404;  // not marked: the hook leaves the piece alone
  run_response(Chains{nullptr, &route}, ctx, Phase::kHeaderFilter);
  std::string_view in = "body";
  std::string_view out = run_body_filter(Chains{nullptr, &route}, ctx, in, true);
  EXPECT_EQ(out.data(), in.data());
  EXPECT_EQ(out.size(), in.size());
}

TEST(ContextMarks, EachEntryHasItsOwnBitInBothChains) {
  std::vector<Entry> g, r;
  g.push_back(rewriter("upper", 10));
  r.push_back(rewriter("upper", 10));
  r.push_back(rewriter("tail", 5));
  Chain global(std::move(g)), route(std::move(r));
  Context ctx;
  ctx.status = 200;
  run_response(Chains{&global, &route}, ctx, Phase::kHeaderFilter);
  EXPECT_EQ(ctx.marks_[0], 1u);  // the global rule's entry 0
  EXPECT_EQ(ctx.marks_[1], 3u);  // the route's entries 0 and 1
  ctx.reset();
  EXPECT_EQ(ctx.marks_[0] | ctx.marks_[1], 0u);
}

TEST(WorkerLocalSlots, FoundByTagAndReplaced) {
  static const char a = 0, b = 0;
  WorkerLocal w;
  int x = 1, y = 2;
  EXPECT_EQ(w.slot<int>(&a), nullptr);
  w.set_slot(&a, &x);
  w.set_slot(&b, &y);
  EXPECT_EQ(w.slot<int>(&a), &x);
  EXPECT_EQ(w.slot<int>(&b), &y);
  w.set_slot(&a, &y);
  EXPECT_EQ(w.slot<int>(&a), &y);
}

TEST(RunResponse, OnlyOneChain) {
  TwoChains t;
  Chains both = t.chains();
  Context ctx;
  run_response(Chains{nullptr, both.route}, ctx, Phase::kLog);
  run_response(Chains{both.global, nullptr}, ctx, Phase::kLog);
  EXPECT_EQ(t.f.calls, (Calls{"r2:log", "g1:log"}));
}

TEST(Context, ResetClearsTheRequestButKeepsCapacity) {
  FakeRequest req("GET", "/x");
  Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.route_id = "1";
  ctx.consumer = "jack";
  ctx.resp.headers.add("X-A", "1");
  ctx.resp.status = 201;
  ctx.upstream.uri = "/y";
  ctx.entry = 3;
  ctx.mark();
  ctx.reply_status = 503;
  ctx.reply_body = "x";
  ctx.status = 200;
  ctx.timed = true;
  ctx.bytes_in = 5;
  ctx.phase = Phase::kAccess;
  ctx.cursor = 3;
  ctx.skip_route = 1;
  ctx.scratch.assign(200, 'k');
  size_t cap = ctx.scratch.capacity();
  ctx.reset();
  EXPECT_EQ(ctx.req, nullptr);
  EXPECT_EQ(ctx.match.req, nullptr);
  EXPECT_TRUE(ctx.route_id.empty());
  EXPECT_TRUE(ctx.consumer.empty());
  EXPECT_TRUE(ctx.resp.empty());
  EXPECT_TRUE(ctx.upstream.empty());
  EXPECT_FALSE(ctx.marked());
  EXPECT_EQ(ctx.reply_status, 0);
  EXPECT_TRUE(ctx.reply_body.empty());
  EXPECT_EQ(ctx.status, 0);
  EXPECT_FALSE(ctx.timed);
  EXPECT_EQ(ctx.bytes_in, 0u);
  EXPECT_EQ(ctx.phase, Phase::kRewrite);
  EXPECT_EQ(ctx.cursor, 0);
  EXPECT_EQ(ctx.skip_route, 0u);
  EXPECT_TRUE(ctx.scratch.empty());
  EXPECT_EQ(ctx.scratch.capacity(), cap);
}

}  // namespace
}  // namespace sluice::plugin
