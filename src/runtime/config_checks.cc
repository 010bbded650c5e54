#include "runtime/config_checks.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

namespace sluice::runtime::config_cli {

namespace {

using Json = nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// An id field as stored: a string, or a number written as one.
std::string id_text(const Json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  return v.is_number_integer() ? std::to_string(v.get<int64_t>()) : std::string();
}

// The strings of `one` (a string) and `many` (a list of strings) together.
std::set<std::string> strings_of(const Json& obj, const char* one, const char* many,
                                 bool fold = false) {
  std::set<std::string> out;
  if (auto it = obj.find(one); it != obj.end() && it->is_string()) {
    out.insert(fold ? lower(it->get<std::string>()) : it->get<std::string>());
  }
  if (auto it = obj.find(many); it != obj.end() && it->is_array()) {
    for (const Json& v : *it) {
      if (v.is_string()) {
        out.insert(fold ? lower(v.get<std::string>()) : v.get<std::string>());
      }
    }
  }
  return out;
}

bool has(const State& s, const std::string& kind, const std::string& id) {
  auto k = s.find(kind);
  return k != s.end() && k->second.contains(id);
}

const Json* find(const State& s, const std::string& kind, const std::string& id) {
  auto k = s.find(kind);
  if (k == s.end()) {
    return nullptr;
  }
  auto it = k->second.find(id);
  return it == k->second.end() ? nullptr : &it->second;
}

void check_references(const State& s, std::vector<Finding>* out) {
  struct Ref {
    const char* kind;
    const char* field;
    const char* target;
  };
  static const Ref kRefs[] = {
      {"routes", "upstream_id", "upstreams"},
      {"routes", "service_id", "services"},
      {"routes", "plugin_config_id", "plugin_configs"},
      {"stream_routes", "upstream_id", "upstreams"},
      {"stream_routes", "service_id", "services"},
      {"services", "upstream_id", "upstreams"},
      {"consumers", "group_id", "consumer_groups"},
  };
  for (const Ref& r : kRefs) {
    auto k = s.find(r.kind);
    if (k == s.end()) {
      continue;
    }
    for (const auto& [id, obj] : k->second) {
      auto f = obj.find(r.field);
      if (f == obj.end() || f->is_null()) {
        continue;
      }
      const std::string target = id_text(*f);
      if (!has(s, r.target, target)) {
        out->push_back({true, fmt::format("{}/{}: {} {} names no {} object", r.kind, id, r.field,
                                          f->dump(), r.target)});
      }
    }
  }
}

// What a route matches, for the shadowing check.
struct RouteMatch {
  std::string id;
  std::set<std::string> uris, hosts, methods;  // hosts/methods empty: any
  Json extra;                                  // vars, remote_addr(s), filter_func: as given
  int64_t priority = 0;
};

std::vector<RouteMatch> route_matches(const State& s) {
  std::vector<RouteMatch> out;
  auto k = s.find("routes");
  if (k == s.end()) {
    return out;
  }
  for (const auto& [id, obj] : k->second) {
    if (obj.value("status", 1) == 0) {
      continue;  // disabled: matches nothing
    }
    RouteMatch m;
    m.id = id;
    m.uris = strings_of(obj, "uri", "uris");
    m.hosts = strings_of(obj, "host", "hosts", true);
    if (m.hosts.empty() && obj.contains("service_id")) {  // a service's hosts apply then
      if (const Json* svc = find(s, "services", id_text(obj["service_id"]))) {
        m.hosts = strings_of(*svc, "host", "hosts", true);
      }
    }
    m.methods = strings_of(obj, "method", "methods");
    m.extra = Json::object();
    for (const char* f : {"vars", "remote_addr", "remote_addrs", "filter_func"}) {
      if (obj.contains(f) && !obj[f].is_null() && !(obj[f].is_array() && obj[f].empty())) {
        m.extra[f] = obj[f];
      }
    }
    m.priority = obj.value("priority", int64_t{0});
    if (!m.uris.empty()) {
      out.push_back(std::move(m));
    }
  }
  return out;
}

// `a` matches every request `b` matches.
bool covers(const RouteMatch& a, const RouteMatch& b) {
  auto superset = [](const std::set<std::string>& x, const std::set<std::string>& y) {
    return std::includes(x.begin(), x.end(), y.begin(), y.end());
  };
  auto open_or_superset = [&](const std::set<std::string>& x, const std::set<std::string>& y) {
    return x.empty() || (!y.empty() && superset(x, y));
  };
  return superset(a.uris, b.uris) && open_or_superset(a.hosts, b.hosts) &&
         open_or_superset(a.methods, b.methods) && (a.extra.empty() || a.extra == b.extra);
}

void check_shadowed(const State& s, std::vector<Finding>* out) {
  const std::vector<RouteMatch> routes = route_matches(s);
  // A route that covers another has all its uris: candidates share the other's first uri.
  std::map<std::string, std::vector<size_t>> by_uri;
  for (size_t i = 0; i < routes.size(); ++i) {
    for (const std::string& u : routes[i].uris) {
      by_uri[u].push_back(i);
    }
  }
  std::set<std::pair<size_t, size_t>> said;
  for (size_t b = 0; b < routes.size(); ++b) {
    const RouteMatch& rb = routes[b];
    for (size_t a : by_uri[*rb.uris.begin()]) {
      const RouteMatch& ra = routes[a];
      if (a == b || !covers(ra, rb)) {
        continue;
      }
      if (ra.priority > rb.priority) {
        out->push_back({false, fmt::format("routes/{} is shadowed by routes/{}: it matches every "
                                           "request routes/{} matches, with a higher priority "
                                           "({} > {}), so routes/{} never serves",
                                           rb.id, ra.id, rb.id, ra.priority, rb.priority, rb.id)});
      } else if (ra.priority == rb.priority &&
                 said.insert({std::min(a, b), std::max(a, b)}).second) {
        if (covers(rb, ra)) {
          const auto& [x, y] = std::minmax(ra.id, rb.id);
          out->push_back({false, fmt::format("routes/{} and routes/{} match the same requests "
                                             "with the same priority ({}): which one serves "
                                             "them is not defined",
                                             x, y, ra.priority)});
        } else {
          out->push_back({false, fmt::format("routes/{} may never serve: routes/{} matches "
                                             "every request it matches, with the same priority "
                                             "({}), and which one serves them is not defined",
                                             rb.id, ra.id, ra.priority)});
        }
      }
    }
  }
}

// Calls f(host) for each node of an upstream object (both of APISIX's node forms).
template <class F>
void each_node_host(const Json& up, F&& f) {
  auto nodes = up.find("nodes");
  if (nodes == up.end()) {
    return;
  }
  if (nodes->is_object()) {
    for (const auto& [addr, weight] : nodes->items()) {
      std::string host = addr;
      if (host.starts_with("[")) {
        host = host.substr(1, host.find(']') - 1);
      } else if (std::count(host.begin(), host.end(), ':') == 1) {
        host = host.substr(0, host.find(':'));
      }
      f(host);
    }
  } else if (nodes->is_array()) {
    for (const Json& n : *nodes) {
      if (n.is_object() && n.contains("host") && n["host"].is_string()) {
        f(n["host"].get<std::string>());
      }
    }
  }
}

void check_nodes(const State& s, std::vector<Finding>* out) {
  std::map<std::string, std::string> resolved;  // host -> "" or why not
  auto why_not = [&](const std::string& host) -> const std::string& {
    auto it = resolved.find(host);
    if (it != resolved.end()) {
      return it->second;
    }
    unsigned char buf[sizeof(in6_addr)];
    std::string why;
    if (inet_pton(AF_INET, host.c_str(), buf) != 1 && inet_pton(AF_INET6, host.c_str(), buf) != 1) {
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
      if (rc != 0) {
        why = gai_strerror(rc);
      } else {
        freeaddrinfo(res);
      }
    }
    return resolved.emplace(host, why).first->second;
  };
  auto check = [&](const std::string& where, const Json& up) {
    if (!up.is_object() || up.contains("service_name")) {
      return;  // discovery finds the nodes
    }
    each_node_host(up, [&](const std::string& host) {
      if (const std::string& why = why_not(host); !why.empty()) {
        out->push_back(
            {false, fmt::format("{}: node {} does not resolve here ({})", where, host, why)});
      }
    });
  };
  for (const auto& [kind, objects] : s) {
    for (const auto& [id, obj] : objects) {
      if (kind == "upstreams") {
        check(kind + "/" + id, obj);
      } else if ((kind == "routes" || kind == "services" || kind == "stream_routes") &&
                 obj.contains("upstream")) {
        check(kind + "/" + id + " (its upstream)", obj["upstream"]);
      }
    }
  }
}

void check_certificates(const State& s, const config::GatewayConfig& conf,
                        std::vector<Finding>* out) {
  auto ssls = s.find("ssls");
  if (!conf.ssl.enabled || ssls == s.end() || ssls->second.empty()) {
    return;  // no HTTPS in use: every host would be named
  }
  std::set<std::string> snis;
  for (const auto& [id, obj] : ssls->second) {
    if (obj.value("type", std::string("server")) == "server") {
      auto names = strings_of(obj, "sni", "snis", true);
      snis.insert(names.begin(), names.end());
    }
  }
  auto covered = [&](const std::string& host) {
    if (snis.contains(host)) {
      return true;
    }
    for (size_t dot = host.find('.'); dot != std::string::npos; dot = host.find('.', dot + 1)) {
      if (snis.contains("*" + host.substr(dot))) {
        return true;
      }
    }
    return false;
  };
  for (const RouteMatch& r : route_matches(s)) {
    for (const std::string& host : r.hosts) {
      if (!covered(host)) {
        out->push_back({false, fmt::format("routes/{}: host {} has no certificate: no ssls "
                                           "object's snis cover it, so HTTPS requests for it "
                                           "fail the handshake",
                                           r.id, host)});
      }
    }
  }
}

void check_plugin_refs(const State& s, std::vector<Finding>* out) {
  static const std::map<std::string, std::string> kTypes = {
      {"consumer_name", "consumers"},
      {"consumer_group_id", "consumer_groups"},
      {"service_id", "services"},
      {"route_id", "routes"}};
  for (const char* kind :
       {"routes", "services", "plugin_configs", "global_rules", "consumers", "consumer_groups"}) {
    auto k = s.find(kind);
    if (k == s.end()) {
      continue;
    }
    for (const auto& [id, obj] : k->second) {
      auto plugins = obj.find("plugins");
      auto cr = plugins != obj.end() && plugins->is_object() ? plugins->find("consumer-restriction")
                                                             : obj.end();
      if (plugins == obj.end() || cr == plugins->end() || !cr->is_object()) {
        continue;
      }
      auto t = kTypes.find(cr->value("type", std::string("consumer_name")));
      if (t == kTypes.end()) {
        continue;
      }
      for (const char* list : {"whitelist", "blacklist"}) {
        if (auto l = cr->find(list); l != cr->end() && l->is_array()) {
          for (const Json& name : *l) {
            if (!has(s, t->second, id_text(name))) {
              out->push_back({false, fmt::format("{}/{}: consumer-restriction's {} names {} {}, "
                                                 "which does not exist",
                                                 kind, id, list, t->first, name.dump())});
            }
          }
        }
      }
    }
  }
}

// `$secret://<manager>/<id>/<key>` anywhere in `v`.
void scan_secret_refs(const State& s, const std::string& where, const Json& v,
                      std::vector<Finding>* out) {
  if (v.is_string()) {
    const std::string& text = v.get_ref<const std::string&>();
    if (lower(text.substr(0, 10)) != "$secret://") {
      return;
    }
    const std::string rest = text.substr(10);
    const size_t a = rest.find('/');
    const size_t b = a == std::string::npos ? a : rest.find('/', a + 1);
    const std::string id = rest.substr(0, b);
    if (a == std::string::npos || !has(s, "secrets", id)) {
      out->push_back(
          {true, fmt::format("{}: {} names secrets/{}, which does not exist", where, text, id)});
    }
  } else if (v.is_object() || v.is_array()) {
    for (const Json& e : v) {
      scan_secret_refs(s, where, e, out);
    }
  }
}

}  // namespace

std::vector<Finding> check_state(const State& s, const config::GatewayConfig& conf) {
  std::vector<Finding> out;
  check_references(s, &out);
  for (const auto& [kind, objects] : s) {
    if (kind != "secrets") {
      for (const auto& [id, obj] : objects) {
        scan_secret_refs(s, kind + "/" + id, obj, &out);
      }
    }
  }
  check_shadowed(s, &out);
  check_nodes(s, &out);
  check_certificates(s, conf, &out);
  check_plugin_refs(s, &out);
  return out;
}

}  // namespace sluice::runtime::config_cli
