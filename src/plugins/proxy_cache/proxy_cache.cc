#include "plugins/proxy_cache/proxy_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include "common/log.h"
#include "plugins/proxy_cache/cache_control.h"

namespace sluice::plugins::proxy_cache {

using plugin::Action;
using plugin::Context;
using Role = RequestState::Role;

namespace {

const char kPoolKey[] = "proxy-cache/states";

void status_header(Context& ctx, std::string_view v) {
  ctx.resp.headers.set("Apisix-Cache-Status", v);
}

bool cache_header(std::string_view name) {
  return http::iequals(name, "cache-control") || http::iequals(name, "expires");
}

uint8_t method_bit(const http::RequestHead& req) {
  switch (req.method) {
    case http::Method::kGet:
      return kGet;
    case http::Method::kHead:
      return kHead;
    case http::Method::kPost:
      return kPost;
    default:
      return 0;
  }
}

// The variables only the plugin layer knows.
bool plugin_var(const Context& ctx, std::string_view name, std::string_view* out) {
  if (name == "consumer_name") {
    *out = ctx.consumer;
  } else if (name == "consumer_group_id") {
    *out = ctx.consumer_group_id;
  } else if (name == "route_id") {
    *out = ctx.route_id;
  } else if (name == "service_id") {
    *out = ctx.service_id;
  } else if (name == "route_name") {
    *out = ctx.route_name;
  } else {
    return false;
  }
  return true;
}

}  // namespace

ProxyCache::ProxyCache(Conf conf, std::shared_ptr<MemoryZone> mem, std::shared_ptr<DiskZone> disk,
                       int64_t disk_ttl)
    : conf_(std::move(conf)), mem_(std::move(mem)), disk_(std::move(disk)), disk_ttl_(disk_ttl) {
  key_ = compile(conf_.cache_key);
  bypass_ = compile(conf_.cache_bypass);
  no_cache_ = compile(conf_.no_cache);
  for (const Part& p : no_cache_) {
    no_cache_response_ = no_cache_response_ || p.response;
  }
}

uint32_t ProxyCache::phases() const {
  using plugin::Phase;
  using plugin::phase_bit;
  return phase_bit(Phase::kAccess) | phase_bit(Phase::kHeaderFilter) |
         phase_bit(Phase::kBodyFilter) | phase_bit(Phase::kLog);
}

std::vector<ProxyCache::Part> ProxyCache::compile(const std::vector<std::string>& items) {
  std::vector<Part> out;
  for (const std::string& s : items) {
    Part p;
    p.is_var = s.size() > 1 && s[0] == '$';
    p.text = p.is_var ? s.substr(1) : s;
    if (p.is_var) {
      p.var = router::Var::parse(p.text);
      std::string_view n = p.text;
      p.response = n == "status" || n == "upstream_status" || n.starts_with("upstream_http_") ||
                   n.starts_with("sent_http_");
    }
    out.push_back(std::move(p));
  }
  return out;
}

void ProxyCache::append(const std::vector<Part>& parts, Context& ctx, bool response,
                        std::string* out) const {
  router::VarScratch scratch;
  for (const Part& p : parts) {
    if (p.response != response) {
      continue;
    }
    std::string_view v;
    if (!p.is_var) {
      v = p.text;
    } else if (!plugin_var(ctx, p.text, &v)) {
      p.var.find(ctx.match, &scratch, &v);  // nil is empty, as in APISIX's concatenation
    }
    out->append(v);
  }
}

void ProxyCache::build_key(Context& ctx, std::string* out) const {
  out->clear();
  append(key_, ctx, false, out);
  append(key_, ctx, true, out);  // nil while the request is read
}

Action ProxyCache::access(Context& ctx) const {
  if (ctx.held != nullptr || ctx.req == nullptr) {
    return Action::kContinue;  // a second proxy-cache on this request: the first one acts
  }
  auto& pool =
      ctx.worker->object<StatePool>(kPoolKey, [] { return std::make_unique<StatePool>(); });
  RequestState& st = *pool.take();
  st.plugin = this;
  st.mem = mem_.get();
  st.disk = disk_.get();
  ctx.held = &st;
  build_key(ctx, &st.key);
  st.h = key_hash(st.key);
  if (ctx.req->method_text == "PURGE") {
    bool removed = mem_ ? mem_->purge(st.key, st.h) : disk_->purge(st.key, st.h);
    ctx.reply_status = removed ? 200 : 404;
    ctx.reply_body.clear();
    return Action::kReply;
  }
  st.no_cache.clear();
  append(no_cache_, ctx, false, &st.no_cache);
  return mem_ ? lookup_memory(ctx, st) : lookup_disk(ctx, st);
}

Action ProxyCache::lookup_memory(Context& ctx, RequestState& st) const {
  // APISIX's cacheable_request: a method not cached is a MISS that stores nothing.
  if ((method_bit(*ctx.req) & conf_.methods) == 0) {
    status_header(ctx, "MISS");
    return Action::kContinue;
  }
  if (!bypass_.empty()) {
    std::string& v = ctx.scratch;
    v.clear();
    append(bypass_, ctx, false, &v);
    if (set(v)) {
      status_header(ctx, "BYPASS");
      return Action::kContinue;
    }
  }
  Directives cc;
  if (conf_.cache_control) {
    for (size_t i = 0; i < ctx.req->num_headers; ++i) {
      if (http::iequals(ctx.req->headers[i].name, "cache-control")) {
        parse_directives(ctx.req->headers[i].value, &cc);
      }
    }
    if (cc.no_store || cc.no_cache) {
      status_header(ctx, "BYPASS");
      return Action::kContinue;
    }
  }
  EntryPtr e = mem_->get(st.key, st.h);
  if (e == nullptr) {
    if (conf_.cache_control && cc.only_if_cached) {
      status_header(ctx, "MISS");
      ctx.reply_status = 504;
      ctx.reply_body.clear();
      return Action::kReply;
    }
    status_header(ctx, "MISS");
    return join(ctx, st);
  }
  int64_t age = now_s() - e->created;
  bool stale = false;
  if (conf_.cache_control) {
    stale =
        (cc.max_age >= 0 && age > cc.max_age) ||
        (cc.max_stale >= 0 && cc.max_stale != Directives::kAny && age - e->ttl > cc.max_stale) ||
        (cc.min_fresh >= 0 && e->ttl - age < cc.min_fresh);
    // Past its TTL, only a request's max-stale keeps it (APISIX: the shared dict has dropped
    // it otherwise, a MISS).
    if (!stale && age > e->ttl && cc.max_stale < 0) {
      status_header(ctx, "MISS");
      return join(ctx, st);
    }
  } else if (age > e->ttl) {
    status_header(ctx, "MISS");  // APISIX: the shared dict's TTL dropped it
    return join(ctx, st);
  }
  if (stale) {
    status_header(ctx, "STALE");
    return join(ctx, st, false);  // the stored entry is fresh for the zone, not for this request
  }
  st.entry = std::move(e);
  return serve_memory(ctx, st);
}

Action ProxyCache::serve_memory(Context& ctx, RequestState& st) const {
  const Entry& e = *st.entry;
  st.role = Role::kHit;
  hit_fields(ctx, st, e);
  st.mem_source.set(e.body);
  ctx.reply_status = e.status;
  ctx.reply_length = static_cast<int64_t>(e.body.size());
  ctx.reply_source = &st.mem_source;
  return Action::kReply;
}

// The stored fields (less Cache-Control and Expires with hide_cache_headers), Age and the
// status, in the state's vectors: views, nothing copied.
void ProxyCache::hit_fields(Context& ctx, RequestState& st, const Entry& e) const {
  st.fields.clear();
  for (const http::Header& f : e.fields) {
    if (!(conf_.hide_cache_headers && cache_header(f.name))) {
      st.fields.push_back(f);
    }
  }
  int64_t age = std::max<int64_t>(now_s() - e.created, 0);
  auto r = fmt::format_to_n(st.age, sizeof st.age - 1, "{}", age);
  st.fields.push_back({"Age", std::string_view(st.age, r.size)});
  status_header(ctx, "HIT");  // an edit: it replaces a waiter's MISS
  ctx.reply_fields = st.fields;
}

Action ProxyCache::lookup_disk(Context& ctx, RequestState& st) const {
  // nginx's proxy_cache_bypass (APISIX sets it from cache_bypass and an uncached method): the
  // cache is not read; the response is still stored when no_cache allows it.
  bool method_ok = (method_bit(*ctx.req) & conf_.methods) != 0;
  bool bypass = !method_ok;
  if (!bypass && !bypass_.empty()) {
    std::string& v = ctx.scratch;
    v.clear();
    append(bypass_, ctx, false, &v);
    bypass = set(v);
  }
  if (bypass) {
    status_header(ctx, "BYPASS");
    if (method_ok) {
      st.role = Role::kFill;  // not joined: it replaces whatever is stored
      st.convert_head = ctx.req->method == http::Method::kHead;
      if (st.convert_head) {
        ctx.upstream.method = "GET";
      }
    }
    return Action::kContinue;
  }
  switch (disk_->open(st.key, st.h, &st.open)) {
    case DiskZone::Find::kHit:
      if (serve_disk(ctx, st)) {
        return Action::kReply;
      }
      status_header(ctx, "MISS");
      break;
    case DiskZone::Find::kExpired:
      ::close(st.open.fd);
      st.open.fd = -1;
      status_header(ctx, "EXPIRED");
      break;
    case DiskZone::Find::kMiss:
      status_header(ctx, disk_->declined(st.h) ? "EXPIRED" : "MISS");
      break;
  }
  return join(ctx, st);
}

bool ProxyCache::serve_disk(Context& ctx, RequestState& st) const {
  DiskZone::Open& o = st.open;
  if (o.body_len <= FileSource::kPiece) {
    // Small: read whole and checked now, so a bad body is still a miss.
    st.buf.resize(o.body_len);
    Checksum sum;
    bool read = o.body_len == 0 || pread_all(o.fd, st.buf.data(), o.body_len, o.body_at);
    sum.add(st.buf);
    if (!read || sum.value() != o.body_sum) {
      ::close(o.fd);
      o.fd = -1;
      disk_->broken(st.key, st.h, "checksum mismatch in its body");
      return false;
    }
    st.mem_source.set(st.buf);
    ctx.reply_source = &st.mem_source;
  } else {
    st.file_source.set(disk_.get(), &o, &st.buf);
    ctx.reply_source = &st.file_source;
  }
  st.role = Role::kHit;
  hit_fields(ctx, st, o.meta);
  ctx.reply_status = o.meta.status;
  ctx.reply_length = static_cast<int64_t>(o.body_len);
  return true;
}

Action ProxyCache::join(Context& ctx, RequestState& st, bool look_again) const {
  Fills& fills = mem_ ? mem_->fills : disk_->fills;
  bool found = false;
  uint64_t token = 0;
  Fills::Join j = fills.join(
      st.key,
      [&] {
        found = look_again && (mem_ ? mem_->fresh(st.key, st.h) : disk_->fresh(st.h));
        return found;
      },
      [&] {
        token = ctx.worker->host->suspend(ctx);
        return Waiter{ctx.worker->loop, ctx.worker->host, token};
      });
  if (j == Fills::Join::kWait) {
    st.start_wait(ctx, token);
    return Action::kPending;
  }
  if (j == Fills::Join::kFound) {
    // Stored between the look and the join: look again (as a waiter would).
    if (mem_) {
      if (EntryPtr e = mem_->get(st.key, st.h)) {
        st.entry = std::move(e);
        return serve_memory(ctx, st);
      }
    } else if (disk_->open(st.key, st.h, &st.open) == DiskZone::Find::kHit && serve_disk(ctx, st)) {
      return Action::kReply;
    }
    return Action::kContinue;
  }
  st.role = Role::kFill;
  st.joined = true;
  // nginx's proxy_cache_convert_head: a HEAD is fetched as GET so the entry has its body.
  if (ctx.req->method == http::Method::kHead) {
    st.convert_head = true;
    ctx.upstream.method = "GET";
  }
  return Action::kContinue;
}

void ProxyCache::wake(const Waiter& w) {
  Context* ctx = w.host->waiting(w.token);
  if (ctx == nullptr) {
    return;  // the request ended while it waited
  }
  auto* st = static_cast<RequestState*>(ctx->held);
  st->plugin->after_wait(*ctx, *st, w.token);
}

void ProxyCache::after_wait(Context& ctx, RequestState& st, uint64_t token) const {
  st.stop_wait();
  Action a = Action::kContinue;
  if (mem_) {
    if (EntryPtr e = mem_->get(st.key, st.h); e != nullptr && now_s() - e->created <= e->ttl) {
      st.entry = std::move(e);
      a = serve_memory(ctx, st);
    }
  } else if (disk_->open(st.key, st.h, &st.open) == DiskZone::Find::kHit) {
    a = serve_disk(ctx, st) ? Action::kReply : Action::kContinue;
  } else if (st.open.fd >= 0) {
    ::close(st.open.fd);
    st.open.fd = -1;
  }
  // Nothing stored (uncacheable, or the fill failed): this request goes upstream itself, its
  // Apisix-Cache-Status as it was (MISS/EXPIRED).
  ctx.worker->host->resume(token, a);
}

}  // namespace sluice::plugins::proxy_cache
