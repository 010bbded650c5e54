#pragma once
// HostMatcher: a list of host names (`example.com`) and wildcards (`*.example.com`) answering
// "does this host match one" as APISIX's referer-restriction does: an exact name equals the
// host, a wildcard's text after `*` ends it. Case-sensitive, as there. The cost does not grow
// with the list: one hash probe for the names, one per distinct suffix length for the
// wildcards.

#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace sluice::plugins::referer_restriction {

// Thread: any (immutable once built; built on the control thread)
class HostMatcher {
 public:
  // `pattern` as APISIX's host_def allows it: `^\*?[0-9a-zA-Z-._]+$`.
  void add(std::string_view pattern);
  bool matches(std::string_view host) const;

 private:
  // Transparent, so that a view of the request's bytes is looked up without a copy.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Set = std::unordered_set<std::string, Hash, std::equal_to<>>;

  Set exact_;
  Set suffixes_;                     // the text after '*'
  std::vector<size_t> suffix_lens_;  // distinct, shortest first
};

}  // namespace sluice::plugins::referer_restriction
