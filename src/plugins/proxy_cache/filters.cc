// proxy-cache's response half: whether the upstream's answer may be stored (header_filter),
// the body teed into the zone as it leaves (body_filter), the fill ended either way (log);
// and the plugin's registration: the zones made at start, the factory.

#include <fmt/format.h>

#include "common/log.h"
#include "plugins/proxy_cache/cache_control.h"
#include "plugins/proxy_cache/proxy_cache.h"

namespace sluice::plugins::proxy_cache {

using plugin::Context;
using Role = RequestState::Role;

namespace {

const char kZonesKey[] = "proxy-cache/zones";

}  // namespace

int64_t ProxyCache::storable(Context& ctx, RequestState& st) const {
  const http::ResponseHead* up = ctx.upstream_resp;
  if (up == nullptr) {
    return -1;  // the gateway's own answer (a 502 after the tries)
  }
  bool status_ok = false;
  for (int s : conf_.statuses) {
    status_ok = status_ok || s == up->status;
  }
  if (!status_ok) {
    return -1;
  }
  if (!no_cache_.empty()) {
    std::string& v = ctx.scratch;
    v.assign(st.no_cache);
    if (no_cache_response_) {
      router::ResponseView view;
      view.status = up->status;
      view.upstream = up;
      ctx.match.resp = &view;
      append(no_cache_, ctx, true, &v);
      ctx.match.resp = nullptr;
    }
    if (set(v)) {
      return -1;
    }
  }
  Directives cc;
  std::string_view expires;
  bool has_expires = false;
  for (size_t i = 0; i < up->num_headers; ++i) {
    const http::Header& f = up->headers[i];
    if (http::iequals(f.name, "cache-control")) {
      parse_directives(f.value, &cc);
    } else if (http::iequals(f.name, "expires")) {
      expires = f.value;  // the last one wins, as in APISIX
      has_expires = true;
    } else if (http::iequals(f.name, "set-cookie") || http::iequals(f.name, "vary")) {
      // Per-recipient (Set-Cookie), or a variant Sluice does not key (Vary): not shared.
      return -1;
    }
  }
  if (cc.is_private || cc.no_store || cc.no_cache) {
    return -1;
  }
  int64_t now = now_s();
  if (mem_) {
    int64_t ttl =
        conf_.cache_control ? resource_ttl(cc, expires, has_expires, now) : conf_.cache_ttl;
    return ttl > 0 ? ttl : -1;
  }
  // nginx: Cache-Control's max-age (s-maxage first), then Expires, then cache_ttl.
  bool told = cc.s_maxage >= 0 || cc.max_age >= 0 || has_expires;
  int64_t ttl = told ? resource_ttl(cc, expires, has_expires, now) : disk_ttl_;
  return ttl > 0 ? ttl : -1;
}

void ProxyCache::header_filter(Context& ctx) const {
  RequestState* st = state_of(ctx, this);
  if (st == nullptr || st->role == Role::kHit) {
    return;
  }
  if (conf_.hide_cache_headers) {
    ctx.resp.headers.remove("Cache-Control");
    ctx.resp.headers.remove("Expires");
  }
  if (st->role != Role::kFill) {
    return;
  }
  if (ctx.upstream_resp == nullptr && ctx.upstream_ip.empty()) {
    // A plugin's own answer (api-breaker open, a limit's rejection, ...): no upstream was
    // asked, so nothing about the upstream's answer is known. Not stored, not declined (the
    // next request is an ordinary MISS); the waiters go on by themselves.
    st->end_fill();
    st->role = Role::kNone;
    return;
  }
  if (ctx.upstream_resp == nullptr && disk_ && (ctx.status == 502 || ctx.status == 504)) {
    // nginx's `proxy_cache_valid any` (APISIX's cache_ttl) covers its own 502/504 after the
    // tries, as APISIX's docs show: stored when its body, which is whole, goes by.
    st->gateway_error = ctx.status;
    st->buf.clear();
    return;
  }
  int64_t ttl = storable(ctx, *st);
  const http::ResponseHead* up = ctx.upstream_resp;
  if (ttl > 0 && mem_ && up->body_kind == http::BodyKind::kLength &&
      up->content_length > mem_->capacity()) {
    ttl = -1;  // could never fit
  }
  if (ttl <= 0) {
    if (disk_) {
      disk_->decline(st->h);
    }
    st->end_fill();
    st->role = Role::kNone;
    return;
  }
  auto e = std::make_shared<Entry>();
  e->key = st->key;
  e->status = up->status;
  e->created = now_s();
  e->ttl = ttl;
  for (size_t i = 0; i < up->num_headers; ++i) {
    if (stored_field(up->headers[i].name)) {
      e->add_field(up->headers[i].name, up->headers[i].value);
    }
  }
  e->freeze();
  if (mem_ && up->body_kind == http::BodyKind::kLength) {
    e->body.reserve(up->content_length);
  }
  if (disk_ && !st->writer.start(disk_.get(), *e)) {
    st->end_fill();
    st->role = Role::kNone;
    return;
  }
  st->building = std::move(e);
}

void ProxyCache::body_filter(Context& ctx, plugin::BodyPiece& piece) const {
  RequestState* st = state_of(ctx, this);
  if (st != nullptr && st->role == Role::kFill && st->gateway_error != 0) {
    store_gateway_error(*st, piece);
    return;
  }
  if (st == nullptr || st->role != Role::kFill || !st->building) {
    return;
  }
  std::string_view data = piece.data();
  if (mem_) {
    if (st->building->body.size() + data.size() > mem_->capacity()) {
      SLUICE_LOG(kWarn,
                 "proxy-cache: zone {}: response for key {} is over the zone's memory_size; not "
                 "cached",
                 conf_.zone, st->key);
      st->end_fill();
      st->role = Role::kNone;
      return;
    }
    st->building->body.append(data);
  } else if (!data.empty() && !st->writer.write(data)) {
    st->end_fill();
    st->role = Role::kNone;
    return;
  }
  if (!piece.eof()) {
    return;
  }
  if (mem_) {
    if (!mem_->put(st->building)) {
      SLUICE_LOG(kWarn, "proxy-cache: zone {}: entry for key {} is over memory_size; not cached",
                 conf_.zone, st->key);
    }
  } else {
    st->writer.commit();
  }
  st->end_fill();  // wakes the waiters, who find the entry
  st->role = Role::kStored;
}

void ProxyCache::store_gateway_error(RequestState& st, const plugin::BodyPiece& piece) const {
  st.buf.append(piece.data());
  if (!piece.eof()) {
    return;
  }
  Entry e;
  e.key = st.key;
  e.status = st.gateway_error;
  e.created = now_s();
  e.ttl = disk_ttl_;
  if (!st.buf.empty()) {
    e.add_field("Content-Type", st.buf.front() == '{' ? "application/json" : "text/plain");
  }
  e.freeze();
  if (st.writer.start(disk_.get(), e) && st.writer.write(st.buf)) {
    st.writer.commit();
  }
  st.buf.clear();
  st.end_fill();
  st.role = Role::kStored;
}

void ProxyCache::log(Context& ctx) const {
  if (RequestState* st = state_of(ctx, this); st != nullptr) {
    ctx.held = nullptr;
    st->release();  // a fill cut short (the client or the upstream went) stores nothing
  }
}

std::shared_ptr<Zones> make_zones(const ZonesConf& c) {
  auto z = std::make_shared<Zones>();
  z->conf = c;
  return z;
}

namespace {

void process_init(plugin::Shared& shared, const plugin::ProcessEnv&) {
  const plugin::Json& attr = shared.attr_of("proxy-cache");
  ZonesConf conf = default_zones();
  if (!attr.empty()) {
    auto z = zones_from_json(attr);
    if (z.is_ok()) {
      conf = *z;
    } else {
      SLUICE_LOG(kError, "proxy-cache: apisix.proxy_cache: {}", z.status().message());
    }
  }
  set_checked_zones(conf);
  shared.forget(kZonesKey);
  shared.get<Zones>(kZonesKey, [&] { return new Zones{conf, {}, {}}; });
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& j,
                                                             const plugin::BuildEnv& env) {
  auto c = parse(j);
  if (!c.is_ok()) {
    return c.status();
  }
  auto zones = env.shared.get<Zones>(kZonesKey, [] { return new Zones{checked_zones(), {}, {}}; });
  const ZoneConf* zc = nullptr;
  for (const ZoneConf& z : zones->conf.zones) {
    zc = z.name == c->zone ? &z : zc;
  }
  if (zc == nullptr) {
    return common::Status::error("cache_zone " + c->zone + " not found");
  }
  // Zones are made on first use (on the control thread), then live as long as the process.
  std::shared_ptr<MemoryZone> mem;
  std::shared_ptr<DiskZone> disk;
  if (zc->disk()) {
    for (auto& [name, z] : zones->disk) {
      disk = name == zc->name ? z : disk;
    }
    if (!disk) {
      disk = std::make_shared<DiskZone>(*zc);
      zones->disk.emplace_back(zc->name, disk);
    }
  } else {
    for (auto& [name, z] : zones->memory) {
      mem = name == zc->name ? z : mem;
    }
    if (!mem) {
      mem = std::make_shared<MemoryZone>(zc->memory_size);
      zones->memory.emplace_back(zc->name, mem);
    }
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<ProxyCache>(std::move(*c), mem, disk, zones->conf.cache_ttl));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i;
    i.name = "proxy-cache";
    i.priority = 1085;
    i.check = check;
    i.make = make;
    i.schema = kSchema;
    i.process_init = process_init;
    return i;
  }();
  return kInfo;
}

}  // namespace sluice::plugins::proxy_cache
