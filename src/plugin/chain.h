#pragma once
// A chain: the plugins of one route (or of all global rules), merged and sorted at config
// time and split per phase, so a phase no plugin implements costs one bit test. The runner
// plays the global chain before the route's in every phase, and can stop at a hook that
// suspends the request and pick up after it.

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plugin/consumer.h"
#include "plugin/plugin.h"
#include "router/expr.h"

namespace sluice::plugin {

// One configured plugin in a chain, with what its `_meta` asked for.
// Thread: any (immutable once in a Chain)
struct Entry {
  std::string name;
  int priority = 0;
  std::shared_ptr<const Plugin> plugin;
  router::Expr filter;  // `_meta.filter`; empty: always runs
  bool has_filter = false;
  // `_meta.error_response`: replaces the body of this plugin's replies.
  bool has_error_response = false;
  std::string error_response;
  // PluginInfo::prefer_route: in the global chain, skipped for a request whose route chain
  // has a plugin of the same name.
  bool prefer_route = false;
  bool auth = false;  // PluginInfo::auth
};

// Thread: any (immutable)
class Chain {
 public:
  // At most kMaxEntries plugins; sorted by priority, highest first (ties by name).
  static constexpr size_t kMaxEntries = 64;
  explicit Chain(std::vector<Entry> entries);
  Chain() = default;

  // The chain a request runs once it has authenticated as a consumer with plugins (APISIX's
  // merge_consumer_route): `route`'s entries keep their indexes (so marks and filter bits stay
  // theirs), each one the consumer also has replaced by the consumer's, then the consumer's
  // others appended. Its rewrite phase lists only the appended ones (APISIX's
  // rewrite_in_consumer: the route's rewrite has run); every other phase lists all, by
  // priority. Null when the merge would pass kMaxEntries.
  static std::shared_ptr<const Chain> with_consumer(const Chain* route, const Chain& consumer);

  bool has(Phase p) const { return (mask_ & phase_bit(p)) != 0; }
  bool empty() const { return entries_.empty(); }
  bool timed() const { return has(Phase::kLog); }
  // A plugin of this chain reads the whole request body.
  bool needs_body() const { return needs_body_; }
  const std::vector<Entry>& entries() const { return entries_; }
  // Indexes into entries(), in run order, of the plugins implementing `p`.
  std::span<const uint8_t> phase(Phase p) const { return by_phase_[static_cast<int>(p)]; }
  // Indexes into entries() of the plugins that reads_head(), in run order.
  std::span<const uint8_t> head() const { return head_; }
  // Bit i set: entry i's filter rejects this request.
  uint64_t filter_mask(const router::MatchContext& m) const;
  // Bit i set: entry i is prefer_route and `route` has a plugin of its name.
  uint64_t preferred_by(const Chain& route) const;

 private:
  // Lists each phase's entries by priority; the rewrite phase only those in `rewrite_mask`.
  void index_phases(uint64_t rewrite_mask);

  std::vector<Entry> entries_;
  std::array<std::vector<uint8_t>, kPhaseCount> by_phase_;
  std::vector<uint8_t> head_;
  uint32_t mask_ = 0;
  bool any_filter_ = false;
  bool any_prefer_route_ = false;
  bool needs_body_ = false;
};

// The two chains a request runs: the snapshot's global rules and its route's (either may
// be null).
struct Chains {
  const Chain* global = nullptr;
  const Chain* route = nullptr;
  bool has(Phase p) const {
    return (global != nullptr && global->has(p)) || (route != nullptr && route->has(p));
  }
  bool timed() const { return has(Phase::kLog); }
  bool needs_body() const {
    return (global != nullptr && global->needs_body()) || (route != nullptr && route->needs_body());
  }
};

// A worker's merged chains (Chain::with_consumer) by route chain and consumer, kept for the
// snapshot version they were made under: a newer version empties it, and a request still on
// an older one gets a chain made for it alone.
// Thread: worker
class MergedChains {
 public:
  std::shared_ptr<const Chain> get(uint64_t version, const Chain* route, const Consumer& c);

 private:
  static constexpr size_t kMax = 4096;  // past this the map is emptied and starts over
  struct KeyHash {
    size_t operator()(const std::pair<const Chain*, const Consumer*>& k) const {
      return std::hash<const void*>()(k.first) * 31 + std::hash<const void*>()(k.second);
    }
  };
  uint64_t version_ = 0;
  std::unordered_map<std::pair<const Chain*, const Consumer*>, std::shared_ptr<const Chain>,
                     KeyHash>
      map_;
};

// Evaluates the `_meta.filter`s once, while the request head is readable, skips the global
// prefer_route plugins the route has too (APISIX's run_policy "prefer_route"), and runs the
// head() hooks of the plugins that are not skipped.
void prepare(const Chains& c, Context& ctx);

// Runs the request phases from ctx.phase / ctx.cursor through `last` (kAccess when no route
// matched, else kBeforeProxy). kReply: ctx.reply_* are set; kPending: a hook suspended the
// request and will call Host::resume, after which the caller runs this again.
Action run_request(const Chains& c, Context& ctx, Phase last);

// After a pending hook's answer: moves past it, and applies its error_response on kReply.
void resumed(const Chains& c, Context& ctx, Action a);

// Runs header_filter or log for every plugin implementing it.
void run_response(const Chains& c, Context& ctx, Phase p);

// Runs body_filter for every plugin implementing it, with one piece of the response body;
// returns the piece as the hooks left it (the same bytes when none replaced or dropped it).
// Replaced bytes live in ctx.body_buffer until the next call.
std::string_view run_body_filter(const Chains& c, Context& ctx, std::string_view piece, bool eof);

}  // namespace sluice::plugin
