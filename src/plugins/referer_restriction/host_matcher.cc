#include "plugins/referer_restriction/host_matcher.h"

#include <algorithm>

namespace sluice::plugins::referer_restriction {

void HostMatcher::add(std::string_view pattern) {
  if (pattern.empty() || pattern[0] != '*') {
    exact_.emplace(pattern);
    return;
  }
  pattern.remove_prefix(1);
  suffixes_.emplace(pattern);
  if (std::find(suffix_lens_.begin(), suffix_lens_.end(), pattern.size()) == suffix_lens_.end()) {
    suffix_lens_.push_back(pattern.size());
    std::sort(suffix_lens_.begin(), suffix_lens_.end());
  }
}

bool HostMatcher::matches(std::string_view host) const {
  if (exact_.find(host) != exact_.end()) {
    return true;
  }
  for (size_t len : suffix_lens_) {
    if (len > host.size()) {
      break;
    }
    if (suffixes_.find(host.substr(host.size() - len)) != suffixes_.end()) {
      return true;
    }
  }
  return false;
}

}  // namespace sluice::plugins::referer_restriction
