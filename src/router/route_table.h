#pragma once
// RouteTable: APISIX's radixtree_host_uri router, compiled once from a set of routes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "router/expr.h"
#include "router/ip.h"
#include "router/prefix_trie.h"
#include "router/str_map.h"

namespace sluice::router {

// Thread: any (immutable once built). One route as the router sees it.
struct RouteSpec {
  std::vector<std::string> uris;   // "/a/b" exact, "/a/b*" prefix "/a/b", "/a/b/*" prefix "/a/b/"
  std::vector<std::string> hosts;  // "foo.com" or "*.foo.com"; empty = any host
  uint32_t methods = 0;            // mask of http::method_bit(); 0 = any
  std::vector<Cidr> remote_addrs;  // empty = any
  Expr vars;                       // empty = true
  int priority = 0;
  uint32_t index = 0;  // caller's payload: position in its own route array; lower = older
};

// Thread: any (immutable after build).
//
// Order of candidates: the exact host's routes, then wildcard hosts (longest suffix first),
// then host-less routes. Within each of those groups: routes with the exact path, then prefix
// routes, longest prefix first; routes sharing a path or a prefix by priority (higher first),
// then lower index. The first candidate whose methods, remote_addrs and vars pass wins.
// Lookup cost depends on the lengths of the host and path, not on the number of routes.
class RouteTable {
 public:
  RouteTable() = default;  // matches nothing

  // Errors name the route by its index: a uri not starting with '/', a malformed host.
  static common::StatusOr<RouteTable> build(std::vector<RouteSpec> specs);

  // nullptr = no route. Never allocates.
  const RouteSpec* match(const MatchContext& ctx) const;
  size_t size() const { return routes_.size(); }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The routes of one host group; both maps hold an index into lists_.
  struct PathIndex {
    StrMap exact;
    PrefixTrie prefixes;
  };
  struct Span {
    uint32_t begin = 0;
    uint32_t end = 0;
  };
  class Builder;

  const RouteSpec* match_group(uint32_t group, const MatchContext& ctx) const;
  const RouteSpec* first_passing(uint32_t list, const MatchContext& ctx) const;

  std::vector<RouteSpec> routes_;
  std::vector<uint32_t> candidates_;  // route positions; each list a Span of it, best first
  std::vector<Span> lists_;
  std::vector<PathIndex> groups_;
  StrMap exact_hosts_;         // normalized host -> group
  PrefixTrie wildcard_hosts_;  // reversed suffix after '*' -> group
  uint32_t any_host_group_ = kNone;
};

}  // namespace sluice::router
