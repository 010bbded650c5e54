#include "plugin/chain.h"

#include <time.h>

#include <algorithm>

namespace sluice::plugin {

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void Context::reset() {
  end_coder();  // a request that never reached its log phase
  coding = 0;
  req = nullptr;
  match = {};
  real_ip.clear();
  request_id.clear();
  route_id = service_id = matched_uri = matched_host = consumer = consumer_group_id = {};
  credential = nullptr;
  consumers = nullptr;
  route_name = service_name = {};
  snapshot = nullptr;
  route = nullptr;
  upstream.clear();
  upstream_override = nullptr;
  upstream_missing = false;
  resp.clear();
  upstream_resp = nullptr;
  request_body = {};
  body_buffer.clear();
  reply_status = 0;
  reply_body.clear();
  reply_source = nullptr;
  reply_fields = {};
  reply_length = -1;
  if (held != nullptr) {
    held->release();
    held = nullptr;
  }
  timed = false;
  status = 0;
  upstream_ip = {};
  upstream_port = 0;
  start_ns = upstream_start_ns = upstream_end_ns = 0;
  bytes_in = bytes_out = 0;  // cpu_ns: set by the connection when the exchange begins
  phase = Phase::kRewrite;
  cursor = 0;
  skip_global = skip_route = 0;
  pending = nullptr;
  scratch.clear();
  stash.clear();
  log_capture.clear();
  trace.clear();
  breaker_key = 0;
  entry = 0;
  marks_[0] = marks_[1] = 0;
  entry_words_n_ = 0;
}

void Context::end_coder() {
  if (coder_state != nullptr) {
    coder_state->release();
    coder_state = nullptr;
  }
  coder = nullptr;
}

void WorkerLocal::set_slot(const void* tag, void* value) {
  for (auto& s : slots_) {
    if (s.tag == tag) {
      s.value = value;
      return;
    }
  }
  slots_.push_back({tag, value});
}

Chain::Chain(std::vector<Entry> entries) : entries_(std::move(entries)) {
  std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.name < b.name;
  });
  if (entries_.size() > kMaxEntries) {
    entries_.resize(kMaxEntries);  // the builder refuses more; this keeps the masks sound
  }
  index_phases(~uint64_t{0});
}

void Chain::index_phases(uint64_t rewrite_mask) {
  std::vector<uint8_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = static_cast<uint8_t>(i);
  }
  std::stable_sort(order.begin(), order.end(), [this](uint8_t x, uint8_t y) {
    const Entry& a = entries_[x];
    const Entry& b = entries_[y];
    return a.priority != b.priority ? a.priority > b.priority : a.name < b.name;
  });
  for (uint8_t i : order) {
    uint32_t bits = entries_[i].plugin->phases();
    for (int p = 0; p < kPhaseCount; ++p) {
      if ((bits & (1u << p)) == 0) {
        continue;
      }
      if (p == static_cast<int>(Phase::kRewrite) && (rewrite_mask >> i & 1) == 0) {
        continue;
      }
      by_phase_[p].push_back(i);
      mask_ |= 1u << p;
    }
    any_filter_ = any_filter_ || entries_[i].has_filter;
    any_prefer_route_ = any_prefer_route_ || entries_[i].prefer_route;
    needs_body_ = needs_body_ || entries_[i].plugin->needs_body();
    if (entries_[i].plugin->reads_head()) {
      head_.push_back(i);
    }
  }
}

std::shared_ptr<const Chain> Chain::with_consumer(const Chain* route, const Chain& consumer) {
  auto merged = std::make_shared<Chain>();
  if (route != nullptr) {
    merged->entries_ = route->entries_;
  }
  uint64_t added = 0;
  for (const Entry& e : consumer.entries_) {
    auto same = std::find_if(merged->entries_.begin(), merged->entries_.end(),
                             [&](const Entry& r) { return r.name == e.name; });
    if (same != merged->entries_.end()) {
      *same = e;
      continue;
    }
    if (merged->entries_.size() == kMaxEntries) {
      return nullptr;
    }
    added |= uint64_t{1} << merged->entries_.size();
    merged->entries_.push_back(e);
  }
  merged->index_phases(added);
  return merged;
}

std::shared_ptr<const Chain> MergedChains::get(uint64_t version, const Chain* route,
                                               const Consumer& c) {
  if (version < version_) {
    return Chain::with_consumer(route, *c.chain);  // an older snapshot's request
  }
  if (version > version_ || map_.size() >= kMax) {
    map_.clear();
    version_ = version;
  }
  auto [it, fresh] = map_.try_emplace({route, &c});
  if (fresh) {
    it->second = Chain::with_consumer(route, *c.chain);
  }
  return it->second;
}

uint64_t Chain::filter_mask(const router::MatchContext& m) const {
  if (!any_filter_) {
    return 0;
  }
  uint64_t skip = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].has_filter && !entries_[i].filter.eval(m)) {
      skip |= uint64_t{1} << i;
    }
  }
  return skip;
}

uint64_t Chain::preferred_by(const Chain& route) const {
  if (!any_prefer_route_) {
    return 0;
  }
  uint64_t skip = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].prefer_route) {
      continue;
    }
    for (const Entry& r : route.entries()) {
      if (r.name == entries_[i].name) {
        skip |= uint64_t{1} << i;
        break;
      }
    }
  }
  return skip;
}

void prepare(const Chains& c, Context& ctx) {
  ctx.skip_global = c.global != nullptr ? c.global->filter_mask(ctx.match) : 0;
  if (c.global != nullptr && c.route != nullptr) {
    ctx.skip_global |= c.global->preferred_by(*c.route);
  }
  ctx.skip_route = c.route != nullptr ? c.route->filter_mask(ctx.match) : 0;
  if (c.global != nullptr) {
    for (uint8_t i : c.global->head()) {
      if ((ctx.skip_global >> i & 1) == 0) {
        ctx.entry = i;
        c.global->entries()[i].plugin->head(ctx);
      }
    }
  }
  if (c.route != nullptr) {
    for (uint8_t i : c.route->head()) {
      if ((ctx.skip_route >> i & 1) == 0) {
        ctx.entry = static_cast<uint16_t>(64 + i);
        c.route->entries()[i].plugin->head(ctx);
      }
    }
  }
}

namespace {

// The entry at position `cursor` of phase `p` across both chains; null past the end. Points
// ctx.entry at it (its bit of Context::mark).
const Entry* at(const Chains& c, Phase p, size_t cursor, Context& ctx) {
  size_t gn = c.global != nullptr ? c.global->phase(p).size() : 0;
  if (cursor < gn) {
    ctx.entry = c.global->phase(p)[cursor];
    return &c.global->entries()[ctx.entry];
  }
  cursor -= gn;
  if (c.route == nullptr || cursor >= c.route->phase(p).size()) {
    return nullptr;
  }
  ctx.entry = static_cast<uint16_t>(64 + c.route->phase(p)[cursor]);
  return &c.route->entries()[c.route->phase(p)[cursor]];
}

// Whether `_meta.filter` said no to the entry at `cursor`.
bool skipped(const Chains& c, const Context& ctx, Phase p, size_t cursor) {
  size_t gn = c.global != nullptr ? c.global->phase(p).size() : 0;
  if (cursor < gn) {
    return (ctx.skip_global >> c.global->phase(p)[cursor] & 1) != 0;
  }
  return (ctx.skip_route >> c.route->phase(p)[cursor - gn] & 1) != 0;
}

Action call(const Entry& e, Phase p, Context& ctx) {
  switch (p) {
    case Phase::kRewrite:
      return e.plugin->rewrite(ctx);
    case Phase::kAccess:
      return e.plugin->access(ctx);
    case Phase::kBeforeProxy:
      return e.plugin->before_proxy(ctx);
    case Phase::kHeaderFilter:
      e.plugin->header_filter(ctx);
      return Action::kContinue;
    case Phase::kBodyFilter:  // run_body_filter calls it with the piece
      return Action::kContinue;
    case Phase::kLog:
      e.plugin->log(ctx);
      return Action::kContinue;
  }
  return Action::kContinue;
}

// APISIX's run_plugin replaces the body only of an error answer (code >= 400): a redirect
// keeps its own.
void apply_error_response(const Entry& e, Context& ctx) {
  if (e.has_error_response && ctx.reply_status >= 400) {
    ctx.reply_body = e.error_response;
  }
}

}  // namespace

Action run_request(const Chains& c, Context& ctx, Phase last) {
  for (; ctx.phase <= last;
       ctx.phase = static_cast<Phase>(static_cast<int>(ctx.phase) + 1), ctx.cursor = 0) {
    if (!c.has(ctx.phase)) {
      continue;
    }
    for (const Entry* e; (e = at(c, ctx.phase, ctx.cursor, ctx)) != nullptr; ++ctx.cursor) {
      if (skipped(c, ctx, ctx.phase, ctx.cursor)) {
        continue;
      }
      Action a = call(*e, ctx.phase, ctx);
      if (a == Action::kContinue) {
        continue;
      }
      if (a == Action::kReply) {
        apply_error_response(*e, ctx);
      } else {
        ctx.pending = e->plugin.get();
      }
      return a;
    }
  }
  return Action::kContinue;
}

void resumed(const Chains& c, Context& ctx, Action a) {
  ctx.pending = nullptr;
  if (a == Action::kReply) {
    if (const Entry* e = at(c, ctx.phase, ctx.cursor, ctx); e != nullptr) {
      apply_error_response(*e, ctx);
    }
  }
  ++ctx.cursor;
}

void run_response(const Chains& c, Context& ctx, Phase p) {
  if (p == Phase::kLog) {
    ctx.end_coder();
  }
  if (!c.has(p)) {
    return;
  }
  for (size_t i = 0;; ++i) {
    const Entry* e = at(c, p, i, ctx);
    if (e == nullptr) {
      break;
    }
    if (!skipped(c, ctx, p, i)) {
      call(*e, p, ctx);
    }
  }
  // The coder a hook chose starts once the head is final (BodyCoder).
  if (p == Phase::kHeaderFilter && ctx.coder != nullptr) {
    ctx.coder->start(ctx);
  }
}

std::string_view run_body_filter(const Chains& c, Context& ctx, std::string_view piece, bool eof) {
  if (!c.has(Phase::kBodyFilter) && ctx.coder == nullptr) {
    return piece;
  }
  BodyPiece bp(piece, eof, &ctx.body_buffer);
  for (size_t i = 0; c.has(Phase::kBodyFilter); ++i) {
    const Entry* e = at(c, Phase::kBodyFilter, i, ctx);
    if (e == nullptr) {
      break;
    }
    if (!skipped(c, ctx, Phase::kBodyFilter, i)) {
      e->plugin->body_filter(ctx, bp);
    }
  }
  // The coder sees the body as every other plugin left it (BodyCoder).
  if (ctx.coder != nullptr) {
    ctx.coder->code(ctx, bp);
  }
  return bp.data();
}

}  // namespace sluice::plugin
