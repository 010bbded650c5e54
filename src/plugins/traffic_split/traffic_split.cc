#include "plugins/traffic_split/traffic_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/log.h"

namespace sluice::plugins::traffic_split {

using common::Status;
using common::StatusOr;
using plugin::Json;

namespace {

// GET /apisix/admin/plugins/traffic-split: APISIX's schema, its shape kept (the inline
// upstream is schema_def.upstream, shown here by reference).
constexpr std::string_view kSchema = R"({"type":"object","properties":{"rules":{"type":"array",
"items":{"type":"object","properties":{"match":{"type":"array","items":{"type":"object",
"properties":{"vars":{"type":"array"}}}},"weighted_upstreams":{"type":"array","items":{
"type":"object","properties":{"upstream_id":{"anyOf":[{"type":"string","minLength":1,
"maxLength":64,"pattern":"^[a-zA-Z0-9-_.]+$"},{"type":"integer","minimum":1}]},
"upstream":{"type":"object","description":"an upstream object, as schema_def.upstream"},
"weight":{"type":"integer","default":1,"minimum":0,"description":"used to split traffic between different upstreams for plugin configuration"}}},
"default":[{"weight":1}],"minItems":1,"maxItems":20}},"additionalProperties":false}}},
"additionalProperties":false})";

const plugin::PluginInfo kInfo{"traffic-split", 966, false, check, make, kSchema};

}  // namespace

const plugin::PluginInfo& info() { return kInfo; }

Schedule::Schedule(const std::vector<int64_t>& weights) {
  uint64_t g = 0;
  for (int64_t w : weights) {
    g = std::gcd(g, static_cast<uint64_t>(w));
  }
  if (g == 0) {
    return;  // all zero
  }
  for (int64_t w : weights) {
    total_ += static_cast<uint64_t>(w) / g;
    bounds_.push_back(total_);
  }
  if (total_ <= kMaxSpelled) {
    // Smooth weighted round robin: each pick raises every current by its weight and takes the
    // highest, which then gives back the total.
    std::vector<int64_t> current(weights.size(), 0);
    for (uint64_t k = 0; k < total_; ++k) {
      size_t best = 0;
      for (size_t i = 0; i < weights.size(); ++i) {
        current[i] += weights[i] / static_cast<int64_t>(g);
        if (current[i] > current[best]) {
          best = i;
        }
      }
      current[best] -= static_cast<int64_t>(total_);
      order_.push_back(static_cast<uint8_t>(best));
    }
    bounds_.clear();
    return;
  }
  stride_ = total_ * 618 / 1000 | 1;
  while (std::gcd(stride_, total_) != 1) {
    stride_ += 2;
  }
}

int Schedule::next() const {
  if (total_ == 0) {
    return -1;
  }
  uint64_t k = count_.fetch_add(1, std::memory_order_relaxed) % total_;
  if (!order_.empty()) {
    return order_[k];
  }
  // __int128: k * stride may pass 2^64 for weights near the integer limits.
  uint64_t slot = static_cast<uint64_t>(static_cast<unsigned __int128>(k) * stride_ % total_);
  return static_cast<int>(std::upper_bound(bounds_.begin(), bounds_.end(), slot) - bounds_.begin());
}

TrafficSplit::TrafficSplit(std::vector<CompiledRule> rules) : rules_(std::move(rules)) {}

// As APISIX's access(): a rule without `match` is taken; otherwise its first passing match
// takes it. `passed` carries over from one rule to the next, as in APISIX, so a rule with an
// empty `match` list is taken exactly when the rule before it was not tried or passed.
const TrafficSplit::CompiledRule* TrafficSplit::rule_for(const router::MatchContext& m) const {
  bool passed = true;
  for (const CompiledRule& r : rules_) {
    if (!r.has_match) {
      return &r;
    }
    for (const router::Expr& e : r.match) {
      passed = e.eval(m);
      if (passed) {
        break;
      }
    }
    if (passed) {
      return &r;
    }
  }
  return nullptr;
}

plugin::Action TrafficSplit::access(plugin::Context& ctx) const {
  const CompiledRule* r = rule_for(ctx.match);
  if (r == nullptr) {
    return plugin::Action::kContinue;
  }
  int i = r->schedule->next();
  if (i < 0) {
    return plugin::Action::kContinue;
  }
  const Choice& c = r->choices[static_cast<size_t>(i)];
  switch (c.kind) {
    case Choice::Kind::kRoute:
      break;
    case Choice::Kind::kUpstream:
      ctx.upstream_override = c.upstream;
      break;
    case Choice::Kind::kMissing:
      SLUICE_LOG(kError, "traffic-split on route {}: failed to find upstream by id: {}",
                 ctx.route_id, c.upstream_id);
      ctx.upstream_missing = true;
      break;
  }
  return plugin::Action::kContinue;
}

namespace {

// APISIX's timeout for an inline upstream that sets none (set_upstream): 15 s each.
Json with_default_timeout(Json conf) {
  if (!conf.contains("timeout")) {
    conf["timeout"] = Json{{"connect", 15}, {"send", 15}, {"read", 15}};
  }
  return conf;
}

// APISIX keys its round robin's servers by upstream_id, and every entry naming the route's
// upstream by one marker: repeats merge into the first, with the last weight.
int merged_index(const std::vector<WeightedUpstream>& list, size_t i) {
  for (size_t j = 0; j < i; ++j) {
    bool both_route = list[j].upstream_id.empty() && list[j].upstream.is_null() &&
                      list[i].upstream_id.empty() && list[i].upstream.is_null();
    bool same_id = !list[i].upstream_id.empty() && list[j].upstream_id == list[i].upstream_id &&
                   list[i].upstream.is_null() && list[j].upstream.is_null();
    if (both_route || same_id) {
      return static_cast<int>(j);
    }
  }
  return -1;
}

StatusOr<TrafficSplit::CompiledRule> compile_rule(const Rule& rule, size_t n,
                                                  const plugin::BuildEnv& env) {
  using Kind = TrafficSplit::Choice::Kind;
  TrafficSplit::CompiledRule out;
  out.has_match = rule.has_match;
  for (const Json& vars : rule.match) {
    if (vars.is_null()) {
      out.match.emplace_back();  // no vars: always passes
      continue;
    }
    auto e = router::Expr::compile(vars);
    if (!e.is_ok()) {
      return e.status();
    }
    out.match.push_back(std::move(e).value());
  }
  std::vector<int64_t> weights;
  const auto& list = rule.weighted_upstreams;
  for (size_t i = 0; i < list.size(); ++i) {
    if (int j = merged_index(list, i); j >= 0) {
      weights[static_cast<size_t>(j)] = list[i].weight;
      weights.push_back(0);
      out.choices.emplace_back();
      continue;
    }
    TrafficSplit::Choice c;
    if (!list[i].upstream.is_null()) {
      std::string id = fmt::format("{} traffic-split rule {} upstream {}", env.owner, n + 1, i + 1);
      auto up = env.shared.upstreams->add(with_default_timeout(list[i].upstream), id);
      if (!up.is_ok()) {
        return Status::error(
            fmt::format("rule {} upstream {}: {}", n + 1, i + 1, up.status().message()));
      }
      c.kind = Kind::kUpstream;
      c.upstream = *up;
    } else if (!list[i].upstream_id.empty()) {
      c.upstream = env.shared.upstreams->find(list[i].upstream_id);
      c.kind = c.upstream != nullptr ? Kind::kUpstream : Kind::kMissing;
      c.upstream_id = list[i].upstream_id;
    }
    out.choices.push_back(std::move(c));
    weights.push_back(list[i].weight);
  }
  out.schedule = std::make_unique<Schedule>(weights);
  return out;
}

}  // namespace

StatusOr<std::shared_ptr<const plugin::Plugin>> make(const Json& conf,
                                                     const plugin::BuildEnv& env) {
  auto c = parse(conf);
  if (!c.is_ok()) {
    return c.status();
  }
  if (env.shared.upstreams == nullptr) {
    return Status::error("traffic-split is built only with a snapshot (its upstreams live there)");
  }
  std::vector<TrafficSplit::CompiledRule> rules;
  for (size_t n = 0; n < c->rules.size(); ++n) {
    auto r = compile_rule(c->rules[n], n, env);
    if (!r.is_ok()) {
      return r.status();
    }
    rules.push_back(std::move(r).value());
  }
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<TrafficSplit>(std::move(rules)));
}

}  // namespace sluice::plugins::traffic_split
