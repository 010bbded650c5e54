#include "config/snapshot_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "config/field_decoder.h"
#include "config/plugin_chains.h"
#include "config/resources.h"
#include "http/message.h"

namespace sluice::config {

namespace {

// Seconds to milliseconds, clamped into uint32 (a config may say 1e12 seconds).
uint32_t to_ms(double seconds, uint32_t floor = 1) {
  double ms = seconds * 1000.0;
  return ms < floor ? floor : ms > 4e9 ? 4000000000u : static_cast<uint32_t>(ms);
}

upstream::Timeouts to_timeouts(const TimeoutConf& t) {
  return {to_ms(t.connect), to_ms(t.send), to_ms(t.read)};
}

// The Host a node gets under pass_host: node: its port only when not the scheme's own, as
// APISIX's parse_server_for_upstream_host writes it.
std::string host_header(const std::string& host, uint16_t port, const std::string& scheme) {
  bool v6 = host.find(':') != std::string::npos;
  std::string h = v6 ? "[" + host + "]" : host;
  bool tls = scheme == "https" || scheme == "grpcs";
  return port == (tls ? 443 : 80) ? h : fmt::format("{}:{}", h, port);
}

class Builder final : public plugin::UpstreamCatalog {
 public:
  Builder(const ConfigSet& set, upstream::DnsCache& dns, plugin::Shared& shared,
          health::Registry& health, std::string_view trusted_ca, BuildResult& out)
      : set_(set),
        dns_(dns),
        shared_(shared),
        health_(health),
        trusted_ca_(trusted_ca),
        out_(out) {}

  // plugin::UpstreamCatalog, for plugins that pick another upstream (traffic-split).
  const upstream::Upstream* find(const std::string& id) override {
    ++uses;
    auto it = by_upstream_id_.find(id);
    return it == by_upstream_id_.end() ? nullptr : it->second;
  }
  common::StatusOr<const upstream::Upstream*> add(const Json& conf,
                                                  const std::string& id) override {
    ++uses;
    auto u = decode_upstream(conf);
    if (!u.is_ok()) {
      return u.status();
    }
    return add_upstream(*u, id);
  }

  // Runs the link step of every served kind, in the order of kKindSteps (below).
  common::Status build(uint64_t version);

  // The link steps, one per served kind.
  // Served through the plugins that read it while they are built (cors's
  // allow_origins_by_metadata): lent to them through plugin::Shared until build() ends.
  common::Status link_plugin_metadata() {
    for (const PluginMetadataConf& m : set_.plugin_metadata) {
      metadata_.emplace(m.id, m.value);
    }
    shared_.metadata = &metadata_;
    return common::Status::ok();
  }

  common::Status link_upstreams() {
    for (const auto& u : set_.upstreams) {
      by_upstream_id_[u.id] = add_upstream(u, u.id);
    }
    return common::Status::ok();
  }

  common::Status link_services() {
    for (const auto& s : set_.services) {
      services_[s.id] = &s;
    }
    return common::Status::ok();
  }

  common::Status link_plugin_configs() {
    for (const auto& pc : set_.plugin_configs) {
      plugin_configs_[pc.id] = &pc;
    }
    return common::Status::ok();
  }

  common::Status link_global_rules() {
    auto global = build_global_chain(set_.global_rules, shared_, &out_.warnings);
    if (!global.is_ok()) {
      return global.status();
    }
    snap_->global = std::move(global).value();
    return common::Status::ok();
  }

  // Consumer groups are served through their consumers (link_consumers).
  common::Status link_consumer_groups() { return common::Status::ok(); }
  common::Status link_consumers() {
    auto consumers = build_consumers(set_, shared_, &out_.warnings);
    if (!consumers.is_ok()) {
      return consumers.status();
    }
    snap_->consumers = std::move(consumers).value();
    return common::Status::ok();
  }

  common::Status link_ssls() {
    snap_->certs = build_cert_index(set_.ssls, &out_.warnings);
    return common::Status::ok();
  }

  common::Status link_routes() {
    // Older routes win ties: order by create_time, then by position in the set.
    std::vector<const RouteConf*> routes;
    for (const auto& r : set_.routes) {
      if (r.status == 1) {
        routes.push_back(&r);
      }
    }
    std::stable_sort(routes.begin(), routes.end(), [](const RouteConf* a, const RouteConf* b) {
      return a->create_time < b->create_time;
    });
    std::vector<router::RouteSpec> specs;
    specs.reserve(routes.size());
    for (const RouteConf* r : routes) {
      router::RouteSpec spec;
      common::Status st = add_route(*r, &spec);
      if (!st) {
        return common::Status::error(fmt::format("route {}: {}", r->id, st.message()));
      }
      spec.index = static_cast<uint32_t>(snap_->routes.size() - 1);
      specs.push_back(std::move(spec));
    }
    auto table = router::RouteTable::build(std::move(specs));
    if (!table) {
      return table.status();
    }
    snap_->table = std::move(table).value();
    return common::Status::ok();
  }

 private:
  const upstream::Upstream* add_upstream(const UpstreamConf& c, const std::string& id) {
    auto up = std::make_unique<upstream::Upstream>();
    up->id = id;
    up->index = static_cast<uint32_t>(snap_->upstreams.size());
    for (const auto& n : c.nodes) {
      upstream::Node node;
      node.host = n.host;
      node.port = n.port;
      node.weight = n.weight;
      node.priority = n.priority;
      node.host_header = host_header(n.host, n.port, c.scheme);
      node.ip = dns_.lookup(n.host);
      node.resolved = !node.ip.empty() && io::make_sockaddr(node.ip, n.port, &node.addr);
      if (!node.resolved) {
        out_.warnings.push_back(
            fmt::format("upstream {}: node {} does not resolve; it is skipped", id, n.host));
      }
      up->any_resolved = up->any_resolved || node.resolved;
      node.addr_key = fmt::format("{}:{}", node.ip, n.port);
      up->nodes.push_back(std::move(node));
    }
    int n = static_cast<int>(up->nodes.size());
    up->retries = c.retries.value_or(n > 0 ? n - 1 : 0);
    up->retry_timeout_ms = static_cast<uint32_t>(std::min(c.retry_timeout * 1000.0, 4e9));
    if (c.timeout) {
      up->timeouts = to_timeouts(*c.timeout);
    }
    up->pool_size = static_cast<uint32_t>(c.keepalive_pool.size);
    up->pool_idle_ms = to_ms(c.keepalive_pool.idle_timeout, 0);
    up->pool_requests = static_cast<uint32_t>(c.keepalive_pool.requests);
    up->pass_host = c.pass_host == PassHost::kNode      ? upstream::PassHost::kNode
                    : c.pass_host == PassHost::kRewrite ? upstream::PassHost::kRewrite
                                                        : upstream::PassHost::kPass;
    up->upstream_host = c.upstream_host;
    up->grpc = c.scheme == "grpc" || c.scheme == "grpcs";
    if (c.scheme == "https" || c.scheme == "grpcs") {
      set_upstream_tls(c, {&set_.ssls, snap_->certs.get(), trusted_ca_}, up.get(), &out_.warnings);
    }
    set_balancer(c, up.get());
    add_health(c, *up);
    snap_->upstreams.push_back(std::move(up));
    return snap_->upstreams.back().get();
  }

  // The balancer type and, for chash, the compiled key and the ring (built once here, shared
  // by every worker).
  static void set_balancer(const UpstreamConf& c, upstream::Upstream* up) {
    using upstream::HashOn;
    switch (c.type) {
      case BalancerType::kRoundRobin:
        up->type = upstream::BalancerType::kRoundRobin;
        break;
      case BalancerType::kChash:
        up->type = upstream::BalancerType::kChash;
        break;
      case BalancerType::kLeastConn:
        up->type = upstream::BalancerType::kLeastConn;
        break;
      case BalancerType::kEwma:
        up->type = upstream::BalancerType::kEwma;
        break;
    }
    up->key = c.key;
    up->hash_on = c.hash_on == "header"              ? HashOn::kHeader
                  : c.hash_on == "cookie"            ? HashOn::kCookie
                  : c.hash_on == "consumer"          ? HashOn::kConsumer
                  : c.hash_on == "vars_combinations" ? HashOn::kVarsCombinations
                                                     : HashOn::kVars;
    if (up->type == upstream::BalancerType::kChash) {
      up->hash_key = upstream::HashKey::compile(up->hash_on, up->key);
      up->ring = upstream::ChashRing::build(up->nodes);
    }
  }

  // As APISIX, an upstream of one node is not checked: it gets the traffic either way.
  void add_health(const UpstreamConf& c, upstream::Upstream& up) {
    if (!c.health_checks || up.nodes.size() < 2) {
      return;
    }
    // A probe sends the Host (and, over https, the server name) the proxied requests would:
    // upstream_host under pass_host: rewrite (as APISIX's checker does), else the node's.
    std::vector<health::Target> targets;
    for (const upstream::Node& n : up.nodes) {
      const std::string& host =
          up.pass_host == upstream::PassHost::kRewrite ? up.upstream_host : n.host_header;
      targets.push_back({n.ip, n.port, n.addr, host, n.resolved && n.weight > 0});
    }
    up.health = health_.get(up.id, resource_key(up.id), c.checks.dump(), c.health_checks,
                            std::move(targets));
  }

  // The upstream's etcd key, as APISIX names it in apisix_upstream_status.
  static std::string resource_key(const std::string& id) {
    for (const char* kind : {"route", "service"}) {
      std::string prefix = std::string(kind) + ":";
      if (id.starts_with(prefix)) {
        return fmt::format("/apisix/{}s/{}", kind, id.substr(prefix.size()));
      }
    }
    return "/apisix/upstreams/" + id;
  }

  common::Status add_route(const RouteConf& r, router::RouteSpec* spec) {
    snapshot::Route route;
    route.id = r.id;
    route.service_id = r.service_id;
    const ServiceConf* svc = nullptr;
    bool service_missing = false;
    if (!r.service_id.empty()) {
      auto it = services_.find(r.service_id);
      if (it == services_.end()) {
        service_missing = true;
        out_.warnings.push_back(fmt::format("route {}: service {} not found; the route answers 404",
                                            r.id, r.service_id));
      } else {
        svc = it->second;
      }
    }
    const upstream::Upstream* up = nullptr;
    bool upstream_missing = false;
    if (r.upstream) {
      up = add_upstream(*r.upstream, "route:" + r.id);
    } else if (!r.upstream_id.empty()) {
      up = find_upstream(r.upstream_id, "route " + r.id);
      upstream_missing = up == nullptr;
    } else if (svc != nullptr && svc->upstream) {
      up = add_upstream(*svc->upstream, "service:" + svc->id);
    } else if (svc != nullptr && !svc->upstream_id.empty()) {
      up = find_upstream(svc->upstream_id, "service " + svc->id);
      upstream_missing = up == nullptr;
    }
    const bool config_missing =
        !r.plugin_config_id.empty() && !plugin_configs_.contains(r.plugin_config_id);
    route.upstream = up;
    using snapshot::RouteTarget;
    route.target = config_missing     ? RouteTarget::kPluginConfigMissing
                   : service_missing  ? RouteTarget::kServiceMissing
                   : up != nullptr    ? RouteTarget::kUpstream
                   : upstream_missing ? RouteTarget::kUpstreamMissing
                                      : RouteTarget::kNoUpstream;
    route.websocket = r.enable_websocket.value_or(svc != nullptr && svc->enable_websocket);
    if (r.timeout) {
      route.timeouts = to_timeouts(*r.timeout);
      route.own_timeout = true;
    } else if (up != nullptr) {
      route.timeouts = up->timeouts;
    }
    spec->uris = r.uris;
    spec->hosts = !r.hosts.empty() || svc == nullptr ? r.hosts : svc->hosts;
    spec->priority = r.priority;
    for (const auto& m : r.methods) {
      spec->methods |= http::method_bit(http::parse_method(m));
    }
    for (const auto& a : r.remote_addrs) {
      auto cidr = router::parse_cidr(a);
      if (!cidr) {
        return common::Status::error(
            fmt::format("invalid configuration: property \"remote_addrs\" validation failed: {}",
                        cidr.status().message()));
      }
      spec->remote_addrs.push_back(*cidr);
    }
    if (!r.vars.is_null()) {
      auto expr = router::Expr::compile(r.vars);
      if (!expr) {
        return expr.status();
      }
      spec->vars = std::move(expr).value();
    }
    if (common::Status st = add_chain(r, svc, &route); !st.is_ok()) {
      return st;
    }
    if (route.chain || snap_->global) {  // only plugins report the matched uri and host
      route.uris = r.uris;
      route.hosts = spec->hosts;
    }
    snap_->routes.push_back(std::move(route));
    return common::Status::ok();
  }

  // The route's plugins merged over its plugin_config's and its service's.
  common::Status add_chain(const RouteConf& r, const ServiceConf* svc, snapshot::Route* route) {
    route->name = r.name;
    const Json* from_config = nullptr;
    if (!r.plugin_config_id.empty()) {
      auto it = plugin_configs_.find(r.plugin_config_id);
      if (it == plugin_configs_.end()) {
        // APISIX answers 503 rather than serve the route without the config's plugins (an
        // auth plugin among them, say): no chain is built.
        out_.warnings.push_back(
            fmt::format("route {}: plugin_config {} not found; the route answers 503", r.id,
                        r.plugin_config_id));
        return common::Status::ok();
      } else {
        from_config = &it->second->plugins;
      }
    }
    const Json* from_service = svc != nullptr ? &svc->plugins : nullptr;
    if (svc != nullptr) {
      route->service_name = svc->name;
    }
    if (!r.plugins.is_object() && from_config == nullptr && from_service == nullptr) {
      return common::Status::ok();
    }
    auto chain = from_config == nullptr && from_service == nullptr
                     ? build_chain(r.plugins, "route/" + r.id, shared_, &out_.warnings)
                     : build_chain(merge_plugins({from_service, from_config, &r.plugins}),
                                   "route/" + r.id, shared_, &out_.warnings);
    if (!chain.is_ok()) {
      return chain.status();
    }
    route->chain = std::move(chain).value();
    return common::Status::ok();
  }

  const upstream::Upstream* find_upstream(const std::string& id, const std::string& who) {
    auto it = by_upstream_id_.find(id);
    if (it == by_upstream_id_.end()) {
      out_.warnings.push_back(fmt::format("{}: upstream {} not found; requests get 502", who, id));
      return nullptr;
    }
    return it->second;
  }

  const ConfigSet& set_;
  upstream::DnsCache& dns_;
  plugin::Shared& shared_;
  health::Registry& health_;
  std::string_view trusted_ca_;
  BuildResult& out_;
  snapshot::Snapshot* snap_ = nullptr;
  std::unordered_map<std::string, const upstream::Upstream*> by_upstream_id_;
  std::unordered_map<std::string, const ServiceConf*> services_;
  std::unordered_map<std::string, const PluginConfigConf*> plugin_configs_;
  std::unordered_map<std::string, Json> metadata_;  // plugin_metadata by plugin name

  std::shared_ptr<snapshot::Snapshot> snap_owner_;
};

// What the builder does with each kind of a ConfigSet, in the order it does it: a kind is
// served exactly when it has a link step here, so config_kinds() (and the warnings naming
// kinds that are kept but not served) cannot disagree with what build() reads.
struct KindStep {
  std::string_view name;
  size_t (*count)(const ConfigSet&);
  common::Status (Builder::*link)();  // null: decoded and checked, but not served yet
};

template <auto Member>
size_t count_of(const ConfigSet& s) {
  return (s.*Member).size();
}

// ssls come first: upstreams name their client certificates by id (tls.client_cert_id).
// plugin_metadata comes before every kind whose plugins are built: they may read it.
const KindStep kKindSteps[] = {
    {"ssls", count_of<&ConfigSet::ssls>, &Builder::link_ssls},
    {"plugin_metadata", count_of<&ConfigSet::plugin_metadata>, &Builder::link_plugin_metadata},
    {"upstreams", count_of<&ConfigSet::upstreams>, &Builder::link_upstreams},
    {"services", count_of<&ConfigSet::services>, &Builder::link_services},
    {"plugin_configs", count_of<&ConfigSet::plugin_configs>, &Builder::link_plugin_configs},
    {"global_rules", count_of<&ConfigSet::global_rules>, &Builder::link_global_rules},
    {"routes", count_of<&ConfigSet::routes>, &Builder::link_routes},
    {"consumer_groups", count_of<&ConfigSet::consumer_groups>, &Builder::link_consumer_groups},
    {"consumers", count_of<&ConfigSet::consumers>, &Builder::link_consumers},
    {"stream_routes", count_of<&ConfigSet::stream_routes>, nullptr},
    {"protos", count_of<&ConfigSet::protos>, nullptr},
    {"secrets", count_of<&ConfigSet::secrets>, nullptr},
};

common::Status Builder::build(uint64_t version) {
  // Plugins built from here on may name upstreams of this snapshot (plugin/upstreams.h).
  struct Lend {
    plugin::Shared& shared;
    ~Lend() {
      shared.upstreams = nullptr;
      shared.metadata = nullptr;
    }
  } lend{shared_};
  shared_.upstreams = this;
  snap_owner_ = std::make_shared<snapshot::Snapshot>();
  snap_ = snap_owner_.get();
  snap_->version = version;
  for (const KindStep& step : kKindSteps) {
    if (step.link == nullptr) {
      continue;
    }
    if (common::Status st = (this->*step.link)(); !st) {
      return st;
    }
  }
  out_.snapshot = std::move(snap_owner_);
  return common::Status::ok();
}

// The check plugins give an inline upstream (traffic-split's): the Admin API's.
common::Status check_plugin_upstream(const Json& conf) {
  auto u = decode_upstream_fields(conf);
  if (!u.is_ok()) {
    return u.status();
  }
  return check_upstream_rules(*u);
}

const bool kUpstreamCheckSet = [] {
  plugin::set_upstream_check(&check_plugin_upstream);
  return true;
}();

}  // namespace

const std::vector<ConfigKind>& config_kinds() {
  static const std::vector<ConfigKind> kinds = [] {
    std::vector<ConfigKind> v;
    for (const KindStep& step : kKindSteps) {
      v.push_back({step.name, step.link != nullptr, step.count});
    }
    return v;
  }();
  return kinds;
}

common::Status check_route_compiles(const RouteConf& r) {
  for (const auto& a : r.remote_addrs) {
    auto cidr = router::parse_cidr(a);
    if (!cidr) {
      return common::Status::error(
          fmt::format("invalid configuration: property \"remote_addrs\" validation failed: {}",
                      cidr.status().message()));
    }
  }
  if (!r.vars.is_null()) {
    auto expr = router::Expr::compile(r.vars);
    if (!expr) {
      return expr.status();  // already "failed to validate the 'vars' expression: ..."
    }
  }
  return common::Status::ok();
}

common::StatusOr<BuildResult> build_snapshot(const ConfigSet& set, upstream::DnsCache& dns,
                                             uint64_t version, plugin::Shared* shared,
                                             health::Registry* health,
                                             std::string_view trusted_ca) {
  static plugin::Shared fallback;  // tests and tools that keep no plugin state across builds
  BuildResult out;
  plugin::Shared& plugins = shared != nullptr ? *shared : fallback;
  health::Registry fresh;
  health::Registry& checks = health != nullptr ? *health : fresh;
  begin_chain_build(plugins);
  checks.begin();
  Builder b(set, dns, plugins, checks, trusted_ca, out);
  common::Status st = b.build(version);
  if (!st) {
    return st;
  }
  end_chain_build(plugins);
  checks.commit();
  return out;
}

}  // namespace sluice::config
