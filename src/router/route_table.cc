#include "router/route_table.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "router/text.h"

namespace sluice::router {

using common::Status;

// Collects candidate lists while the table's maps are filled in, then sorts and flattens them.
class RouteTable::Builder {
 public:
  explicit Builder(RouteTable* table) : t_(table) {}

  Status add(uint32_t position) {
    const RouteSpec& spec = t_->routes_[position];
    if (spec.uris.empty()) {
      return error(spec, "no uri");
    }
    for (const std::string& uri : spec.uris) {
      if (uri.empty() || uri[0] != '/') {
        return error(spec, "invalid uri '" + uri + "': must start with '/'");
      }
    }
    if (spec.hosts.empty()) {
      if (t_->any_host_group_ == kNone) {
        t_->any_host_group_ = new_group();
      }
      add_uris(t_->any_host_group_, spec, position);
      return Status::ok();
    }
    for (const std::string& raw : spec.hosts) {
      const std::string host = normalize_host_pattern(raw);
      const bool wildcard = !host.empty() && host[0] == '*';
      const std::string_view name = std::string_view(host).substr(wildcard ? 1 : 0);
      if (name.empty() || name.size() > kMaxHostLen || name.find('*') != std::string::npos) {
        return error(spec, "invalid host '" + raw + "'");
      }
      uint32_t* group = wildcard
                            ? t_->wildcard_hosts_.insert(std::string(name.rbegin(), name.rend()))
                            : t_->exact_hosts_.insert(name);
      if (*group == kNone) {
        *group = new_group();
      }
      add_uris(*group, spec, position);
    }
    return Status::ok();
  }

  void finish() {
    for (PathIndex& index : t_->groups_) {
      index.prefixes.finalize();
    }
    t_->wildcard_hosts_.finalize();
    const auto& routes = t_->routes_;
    auto better = [&routes](uint32_t a, uint32_t b) {
      const RouteSpec& ra = routes[a];
      const RouteSpec& rb = routes[b];
      if (ra.priority != rb.priority) {
        return ra.priority > rb.priority;
      }
      if (ra.index != rb.index) {
        return ra.index < rb.index;
      }
      return a < b;
    };
    for (std::vector<uint32_t>& list : lists_) {
      std::sort(list.begin(), list.end(), better);
      list.erase(std::unique(list.begin(), list.end()), list.end());
      const auto begin = static_cast<uint32_t>(t_->candidates_.size());
      t_->candidates_.insert(t_->candidates_.end(), list.begin(), list.end());
      t_->lists_.push_back(Span{begin, static_cast<uint32_t>(t_->candidates_.size())});
    }
  }

 private:
  static Status error(const RouteSpec& spec, const std::string& why) {
    return Status::error("route at index " + std::to_string(spec.index) + ": " + why);
  }

  uint32_t new_group() {
    t_->groups_.emplace_back();
    return static_cast<uint32_t>(t_->groups_.size() - 1);
  }

  void add_uris(uint32_t group, const RouteSpec& spec, uint32_t position) {
    for (const std::string& uri : spec.uris) {
      PathIndex& index = t_->groups_[group];
      uint32_t* list = uri.back() == '*'
                           ? index.prefixes.insert(std::string_view(uri).substr(0, uri.size() - 1))
                           : index.exact.insert(uri);
      if (*list == kNone) {
        *list = static_cast<uint32_t>(lists_.size());
        lists_.emplace_back();
      }
      lists_[*list].push_back(position);
    }
  }

  RouteTable* t_;
  std::vector<std::vector<uint32_t>> lists_;
};

common::StatusOr<RouteTable> RouteTable::build(std::vector<RouteSpec> specs) {
  RouteTable table;
  table.routes_ = std::move(specs);
  Builder builder(&table);
  for (size_t i = 0; i < table.routes_.size(); ++i) {
    Status st = builder.add(static_cast<uint32_t>(i));
    if (!st.is_ok()) {
      return st;
    }
  }
  builder.finish();
  return table;
}

const RouteSpec* RouteTable::first_passing(uint32_t list, const MatchContext& ctx) const {
  const Span span = lists_[list];
  for (uint32_t i = span.begin; i < span.end; ++i) {
    const RouteSpec& r = routes_[candidates_[i]];
    if (r.methods != 0 && (r.methods & http::method_bit(ctx.req->method)) == 0) {
      continue;
    }
    if (!r.remote_addrs.empty() &&
        std::none_of(r.remote_addrs.begin(), r.remote_addrs.end(),
                     [&ctx](const Cidr& c) { return c.contains(ctx.remote_ip); })) {
      continue;
    }
    if (r.vars.eval(ctx)) {
      return &r;
    }
  }
  return nullptr;
}

const RouteSpec* RouteTable::match_group(uint32_t group, const MatchContext& ctx) const {
  const PathIndex& index = groups_[group];
  const std::string_view path = ctx.req->uri;  // normalised: see http/path.h
  const uint32_t exact = index.exact.find(path);
  if (exact != kNone) {
    if (const RouteSpec* r = first_passing(exact, ctx)) {
      return r;
    }
  }
  const RouteSpec* found = nullptr;
  index.prefixes.visit_prefixes(path, [&](uint32_t list) {
    found = first_passing(list, ctx);
    return found != nullptr;
  });
  return found;
}

const RouteSpec* RouteTable::match(const MatchContext& ctx) const {
  if (!groups_.empty() && (!exact_hosts_.empty() || !wildcard_hosts_.empty())) {
    char buf[kMaxHostLen];
    const std::string_view host = normalize_host(ctx.req->host, buf);
    if (!host.empty()) {
      const uint32_t group = exact_hosts_.find(host);
      if (group != kNone) {
        if (const RouteSpec* r = match_group(group, ctx)) {
          return r;
        }
      }
      if (!wildcard_hosts_.empty()) {
        char reversed[kMaxHostLen];
        std::reverse_copy(host.begin(), host.end(), reversed);
        const RouteSpec* found = nullptr;
        wildcard_hosts_.visit_prefixes(std::string_view(reversed, host.size()), [&](uint32_t g) {
          found = match_group(g, ctx);
          return found != nullptr;
        });
        if (found != nullptr) {
          return found;
        }
      }
    }
  }
  return any_host_group_ == kNone ? nullptr : match_group(any_host_group_, ctx);
}

}  // namespace sluice::router
